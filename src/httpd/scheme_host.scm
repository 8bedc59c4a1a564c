;;; scheme_host.scm - the Scheme side of baton-httpd's Scheme handler.
;;;
;;; Compiled into baton-httpd; boots on the sequencer's dedicated stack
;;; (bindings/chicken) and returns to C at once. The user's FILE is loaded
;;; later, with CHICKEN's interpreter, through httpd_scheme_load: its last
;;; expression must be the handler, a procedure of the shape of Guile's
;;; (seed 004):
;;;
;;;   (lambda (request body)
;;;     (values '((content-type . (text/plain))) "Hello, World!\n"))
;;;
;;; request is an association list ((method . "GET") (target . "/")
;;; (version . "1.1")); body a string. The first value is the response
;;; headers, an alist whose values are a string, a symbol or a list of them
;;; (Guile's '(text/plain) style), or a number taken as the status; a
;;; `status` key sets the status too (default 200). The second value is the
;;; body: a string, or #f for none.

(include "baton-chicken.scm")
(import scheme (chicken base) (chicken foreign) (chicken platform)
        (chicken condition) (chicken memory) (chicken string)
        baton-chicken)

(define handler #f)
(define nul (string #\nul))

;; 1 when FILE's last value is a procedure, else 0 (the reason on stderr).
(define-sequenced-callback (httpd_scheme_load_file (c-string path)) int
  (handle-exceptions exn
      (begin
        (print-error-message exn (current-error-port) "baton-httpd: scheme")
        0)
    (let ((h (with-input-from-file path
               (lambda ()
                 (let loop ((last #f))
                   (let ((form (read)))
                     (if (eof-object? form)
                         last
                         (loop (eval form)))))))))
      (if (procedure? h)
          (begin (set! handler h) 1)
          (begin
            (display "baton-httpd: scheme: the file's last expression is not a procedure\n"
                     (current-error-port))
            0)))))

(define (header-value v)
  (cond ((string? v) v)
        ((symbol? v) (symbol->string v))
        ((number? v) (number->string v))
        ((pair? v) (string-intersperse (map header-value v) ", "))
        (else "")))

;; Writes "name\0value\0" pairs then the body into out (cap bytes);
;; *lens = { headers bytes, body bytes }. Returns the status, or -1 when the
;; handler failed, or -2 when the response does not fit in cap.
(define-sequenced-callback (httpd_scheme_handle (c-string method) (c-string target)
                                                (int minor) (c-pointer body)
                                                (int body_len) (c-pointer out)
                                                (int cap) (c-pointer lens))
  int
  (handle-exceptions exn
      (begin
        (print-error-message exn (current-error-port) "baton-httpd: scheme handler")
        -1)
    (let* ((b (make-string body_len))
           (_ (move-memory! body b body_len))
           (request `((method . ,method) (target . ,target)
                      (version . ,(if (= minor 1) "1.1" "1.0")))))
      (receive (headers rbody) (handler request b)
        (let loop ((hs (if (list? headers) headers '())) (status 200) (parts '()))
          (if (pair? hs)
              (let* ((h (car hs))
                     (name (header-value (car h)))
                     (value (header-value (cdr h))))
                (if (string=? name "status")
                    (loop (cdr hs) (or (string->number value) 500) parts)
                    (loop (cdr hs) status
                          (cons (string-append name nul value nul) parts))))
              (let* ((head (apply string-append (reverse parts)))
                     (text (if (string? rbody) rbody ""))
                     (hl (string-length head))
                     (bl (string-length text)))
                (if (> (+ hl bl) cap)
                    -2
                    (begin
                      (move-memory! head out hl)
                      (move-memory! text out bl 0 hl)
                      (pointer-s32-set! lens hl)
                      (pointer-s32-set! (pointer+ lens 4) bl)
                      status)))))))))

(return-to-host)
