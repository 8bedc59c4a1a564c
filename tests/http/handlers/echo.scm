;; SPDX-License-Identifier: MIT
;;; The Scheme handler of tests/http/test_handlers.py: the target's path
;;; picks what it does (the same paths as echo.lua). Compiled by csc at
;;; start-up, or interpreted with --scheme-eval.
(import (chicken string) (chicken blob) (chicken time) (srfi 4))

;; Compute (CPU time, no blocking) for ms milliseconds.
(define (spin ms)
  (let ((end (+ (current-process-milliseconds) ms)))
    (let loop ((n 0))
      (if (< (current-process-milliseconds) end)
          (loop (+ n 1))
          (string-append "spun " (number->string n) "\n")))))

;; p starts s.
(define (prefix? p s)
  (and (>= (string-length s) (string-length p))
       (string=? p (substring s 0 (string-length p)))))

(define (describe request body)
  (string-append
   "method " (symbol->string (cdr (assq 'method request))) "\n"
   "target " (cdr (assq 'target request)) "\n"
   "version " (cdr (assq 'version request)) "\n"
   ;; names are lower-case symbols; a repeated field has a list of values
   (apply string-append
          (map (lambda (h)
                 (string-append "header " (symbol->string (car h)) ": "
                                (if (string? (cdr h)) (cdr h) (string-intersperse (cdr h) ", "))
                                "\n"))
               (cdr (assq 'headers request))))
   "body " (if body (number->string (u8vector-length body)) "none") "\n"))

;; n bytes of a pattern the test can check.
(define (pattern n)
  (let ((unit "0123456789abcdef") (s (make-string n)))
    (do ((i 0 (+ i 1))) ((= i n) s)
      (string-set! s i (string-ref unit (modulo i 16))))))

;; One response per rule of docs/httpd.md that it breaks.
(define (bad what)
  (cond ((string=? what "status-low") (values 99 '() "x"))
        ((string=? what "status-high") (values 600 '() "x"))
        ((string=? what "status-1xx") (values 101 '() "x"))
        ((string=? what "status-type") (values "200" '() "x"))
        ((string=? what "header-crlf") (values '((x-a . "a\r\nX-Injected: 1")) "x"))
        ((string=? what "header-nul") (values `((x-a . ,(string #\a #\nul #\b))) "x"))
        ((string=? what "header-name") (values '(("Bad Name" . "v")) "x"))
        ((string=? what "content-length") (values '((content-length . 1)) "x"))
        ((string=? what "transfer-encoding") (values '((transfer-encoding . chunked)) "x"))
        ((string=? what "connection") (values '(("Connection" . "close")) "x"))
        ((string=? what "headers-type") (values 5 "x"))
        ((string=? what "header-value-type") (values '((x-a . #t)) "x"))
        ((string=? what "body-type") (values '() 42))
        ((string=? what "stream-204") (values 204 '() (lambda () #f)))
        ((string=? what "body-204") (values 204 '() "x"))
        ((string=? what "too-big") (values '() (pattern 6000000)))
        ((string=? what "nothing") (apply values '()))
        (else (values 404 '() "no such test path\n"))))

(lambda (request body)
  (let* ((target (cdr (assq 'target request)))
         (parts (string-split target "?" #t))
         (path (car parts))
         (query (if (pair? (cdr parts)) (cadr parts) "")))
    (cond ((string=? path "/echo")
           (values '((content-type . "text/plain")) (describe request body)))
          ((string=? path "/spin")
           (values '() (spin (string->number (substring query 3)))))
          ((string=? path "/body")
           (values '(("Content-Type" . "application/octet-stream")) body))
          ((string=? path "/big")
           (values '() (pattern (string->number (substring query 2)))))
          ((prefix? "/status/" path)
           (values (string->number (substring path 8))
                   '((x-custom . yes) (set-cookie . "a=1") (set-cookie . "b=2")
                     (content-type . "text/plain; charset=utf-8")
                     (x-number . 42) (x-list . (l1 l2)))
                   "custom"))
          ((string=? path "/created")
           (values '((status . 201) (content-type . (text/plain))) "created"))
          ((string=? path "/blob")
           (values '() (string->blob "a blob")))
          ((string=? path "/empty")
           (values 204 '() #f))
          ((string=? path "/mode")
           (values '() (cond-expand (compiling "compiled") (else "interpreted"))))
          ((string=? path "/error")
           (error "boom" 1))
          ((string=? path "/runtime-error")
           (car (cdr (assq 'method request))))
          ((prefix? "/bad/" path)
           (bad (substring path 5)))
          (else (values 404 '() "no such test path\n")))))
