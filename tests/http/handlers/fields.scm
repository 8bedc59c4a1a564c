;; SPDX-License-Identifier: MIT
;;; The Scheme handler of tests/http/test_request_fields.py: the request's
;;; fields as JSON, many response headers, and streamed responses (the same
;;; paths as fields.lua).
(import (chicken string) (chicken time) (chicken blob) (srfi 4))

(define (json-string s)
  (string-append
   "\""
   (apply string-append
          (map (lambda (c)
                 (if (or (char<? c #\space) (memv c '(#\" #\\)))
                     (let ((h (number->string (char->integer c) 16)))
                       (string-append "\\u" (make-string (- 4 (string-length h)) #\0) h))
                     (string c)))
               (string->list s)))
   "\""))

;; Strings, numbers, #t/#f, symbols (as strings), alists with string or
;; symbol keys (objects) and lists of strings (arrays).
(define (json v)
  (cond ((string? v) (json-string v))
        ((symbol? v) (json-string (symbol->string v)))
        ((number? v) (number->string v))
        ((eq? v #t) "true")
        ((eq? v #f) "null")
        ((null? v) "{}")
        ((and (pair? v) (pair? (car v)))
         (string-append
          "{" (string-intersperse
               (map (lambda (p)
                      (string-append (json (if (symbol? (car p)) (symbol->string (car p)) (car p)))
                                     ":" (json (cdr p))))
                    v)
               ",")
          "}"))
        ((pair? v) (string-append "[" (string-intersperse (map json v) ",") "]"))
        (else (json-string "?"))))

(define (spin ms)
  (let ((end (+ (current-process-milliseconds) ms)))
    (let loop () (when (< (current-process-milliseconds) end) (loop)))))

(define (field request key) (cdr (assq key request)))

(define (fields request body)
  (let ((headers (field request 'headers)))
    (json
     `((method . ,(symbol->string (field request 'method)))
       (method_is_symbol . ,(symbol? (field request 'method)))
       (target . ,(field request 'target))
       (version . ,(field request 'version))
       (path . ,(field request 'path))
       (query . ,(field request 'query))
       (args . ,(field request 'args))
       (remote_addr . ,(field request 'remote-addr))
       (remote_port . ,(field request 'remote-port))
       (header_names_are_symbols . ,(if (null? headers) #t (symbol? (caar headers))))
       (headers . ,headers)
       (body . ,(and body (blob->string (u8vector->blob body))))
       (body_type . ,(cond ((not body) "nil") ((u8vector? body) "bytevector") (else "other")))))))

(define (arg request name default)
  (let ((a (assoc name (field request 'args))))
    (if a (string->number (cdr a)) default)))

(lambda (request body)
  (let ((path (field request 'path)))
    (cond ((or (string=? path "/fields") (substring=? "/fields/" path))
           (values 200 '((content-type . "application/json")) (fields request body)))
          ((string=? path "/many-headers")
           (values 200
                   (append (let loop ((i 17) (acc '()))
                             (if (= i 0) acc
                                 (loop (- i 1) (cons (cons (string-append "X-H" (number->string i))
                                                           (string-append "v" (number->string i)))
                                                     acc))))
                           '((set-cookie . "c1=1") (set-cookie . "c2=2") (set-cookie . "c3=3")))
                   "many"))
          ((string=? path "/stream")
           (let ((n (arg request "n" 3)) (ms (arg request "ms" 0)) (i 0))
             (values 200 '((content-type . "text/plain") (x-stream . "yes"))
                     (lambda ()
                       (set! i (+ i 1))
                       (cond ((> i n) #f)
                             (else (when (> i 1) (spin ms))
                                   (string-append "piece " (number->string i) "\n")))))))
          ((string=? path "/stream-big")
           (let ((n (arg request "n" 1)) (piece (make-string 262144 #\x)) (i 0))
             (values 200 '()
                     (lambda () (set! i (+ i 1)) (and (<= i n) piece)))))
          ((string=? path "/stream-error")
           (let ((i 0))
             (values 200 '()
                     (lambda ()
                       (set! i (+ i 1))
                       (if (= i 1) "first\n" (error "stream broke"))))))
          (else (values 404 '() "no such test path\n")))))
