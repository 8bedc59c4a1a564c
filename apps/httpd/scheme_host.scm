;;; scheme_host.scm - the Scheme side of baton-httpd's Scheme handler.
;;;
;;; Compiled into baton-httpd; boots on the sequencer's dedicated stack
;;; (bindings/chicken) and returns to C at once. The handler is installed
;;; later by scheme_handler.c, in one of three ways: a shared object
;;; (compiled from the user's file by csc at start-up, or given as is) is
;;; loaded and must have set the global `baton-httpd-handler`; or, with
;;; --scheme-eval, the file is read and each form given to `eval`, the last
;;; one's value being the handler. Either way it is a procedure
;;;
;;;   (lambda (request body)
;;;     (values '((content-type . "text/plain")) "Hello, World!\n"))
;;;
;;; request is an alist ((method . "GET") (target . "/") (version . "1.1")
;;; (headers . (("Host" . "x") ...))) with every header in order, names as
;;; sent; body a string of the body's bytes. It returns (values headers
;;; body) or (values status headers body) (docs/httpd.md). The response is
;;; handed to C (reply.c) field by field while still on this stack: the
;;; collector moves strings once Scheme runs again.
;;;
;;; Every condition the handler raises is caught here and becomes a 500
;;; with one log line; one that reached CHICKEN's top-level handler would
;;; end the process.

(include "baton-chicken.scm")
(import scheme (chicken base) (chicken foreign) (chicken platform)
        (chicken condition) (chicken blob) (chicken format) (chicken load)
        (chicken port) (chicken string)
        baton-chicken)

(foreign-declare "#include \"handlers.h\"")

(define baton-httpd#handler #f)

(define req-size (foreign-lambda size_t "httpd_scm_req_size" c-pointer int int))
(define req-copy! (foreign-lambda void "httpd_scm_req_copy" c-pointer int int scheme-pointer))
(define req-nfields (foreign-lambda int "httpd_scm_req_nfields" c-pointer))
(define req-minor (foreign-lambda int "httpd_scm_req_minor" c-pointer))
(define reply-status! (foreign-lambda int "httpd_reply_status" c-pointer long))
(define reply-header!
  (foreign-lambda int "httpd_reply_header" c-pointer scheme-pointer size_t scheme-pointer size_t))
(define reply-finish! (foreign-lambda int "httpd_reply_finish" c-pointer scheme-pointer size_t))
(define reply-rule! (foreign-lambda void "httpd_scm_rule" c-pointer scheme-pointer size_t))
(define reply-error! (foreign-lambda int "httpd_reply_error" c-pointer scheme-pointer size_t))

;;; Messages

;; v as `write` shows it, cut short: the log line is for a human.
(define (shown v)
  (let ((s (with-output-to-string (lambda () (write v)))))
    (if (> (string-length s) 80)
        (string-append (substring s 0 80) "...")
        s)))

;; One line for a condition (or any raised object). Showing it must not
;; raise in turn: that would escape to the top-level handler.
(define (condition->line exn)
  (handle-exceptions e "(the condition could not be shown)"
    (if (condition? exn)
        (let ((loc (get-condition-property exn 'exn 'location #f))
              (msg (get-condition-property exn 'exn 'message #f))
              (args (get-condition-property exn 'exn 'arguments '())))
          (string-append
           (if loc (sprintf "(~a) " loc) "")
           (if msg (->string msg) (shown (condition->list exn)))
           (if (and (list? args) (pair? args))
               (string-append ": " (string-intersperse (map shown args) " "))
               "")))
        (string-append "a non-condition was raised: " (shown exn)))))

(define (say-load-error file text)
  (let ((port (current-error-port)))
    (display (string-append "baton-httpd: scheme: " file ": " text "\n") port)
    (flush-output port)))

;;; Loading

(define (install! file h)
  (if (procedure? h)
      (begin (set! baton-httpd#handler h) 1)
      (begin
        (say-load-error file (string-append "the handler must be a procedure, not "
                                            (shown h)))
        0)))

;; --scheme-eval: FILE's forms through eval; the last value is the handler.
(define-sequenced-callback (httpd_scheme_eval_file (c-string path)) int
  (handle-exceptions exn
      (begin (say-load-error path (condition->line exn)) 0)
    (install! path
              (with-input-from-file path
                (lambda ()
                  (let loop ((last #f))
                    (let ((form (read)))
                      (if (eof-object? form)
                          last
                          (loop (eval form))))))))))

;; A shared object: loading runs its toplevel, which sets the global
;; baton-httpd-handler (the wrapper csc compiled does it for a source file).
(define-sequenced-callback (httpd_scheme_load_so (c-string path) (c-string shown_as)) int
  (handle-exceptions exn
      (begin (say-load-error shown_as (condition->line exn)) 0)
    (load path)
    (let ((h (handle-exceptions e #f (eval 'baton-httpd-handler))))
      (if h
          (install! shown_as h)
          (begin
            (say-load-error shown_as "it does not define the global baton-httpd-handler")
            0)))))

;;; A request

(define (request-part req part i)
  (let ((s (make-string (req-size req part i))))
    (req-copy! req part i s)
    s))

(define (make-request req)
  `((method . ,(request-part req 0 0))
    (target . ,(request-part req 1 0))
    (version . ,(if (= (req-minor req) 1) "1.1" "1.0"))
    (headers . ,(let loop ((i (- (req-nfields req) 1)) (acc '()))
                  (if (< i 0)
                      acc
                      (loop (- i 1)
                            (cons (cons (request-part req 3 i) (request-part req 4 i))
                                  acc)))))))

;;; Its response, checked on the way to C; each procedure returns #t, or #f
;;; once the reply is broken (C keeps the first reason).

(define (rule out fmt . args)
  (let ((msg (apply sprintf fmt args)))
    (reply-rule! out msg (string-length msg))
    #f))

(define (give-status out s)
  (if (and (exact-integer? s) (fixnum? s))
      (zero? (reply-status! out s))
      (rule out "the status must be an exact integer, not ~a" (shown s))))

(define (atom->string v)
  (cond ((string? v) v)
        ((symbol? v) (symbol->string v))
        ((number? v) (number->string v))
        (else #f)))

;; A string, symbol or number; a list of them is joined with ", " (Guile's
;; '(text/plain) style).
(define (header-value v)
  (if (and (pair? v) (list? v))
      (let ((parts (map atom->string v)))
        (and (not (memq #f parts)) (string-intersperse parts ", ")))
      (atom->string v)))

(define (give-header out h)
  (if (not (and (pair? h) (or (symbol? (car h)) (string? (car h)))))
      (rule out "a header must be a (name . value) pair with a symbol or string name, not ~a"
            (shown h))
      (let ((name (atom->string (car h))))
        (if (string=? name "status")
            (give-status out (cdr h))
            (let ((value (header-value (cdr h))))
              (if value
                  (zero? (reply-header! out name (string-length name)
                                        value (string-length value)))
                  (rule out "header ~a: the value must be a string, symbol, number or a list of them, not ~a"
                        name (shown (cdr h)))))))))

(define (give-headers out headers)
  (if (list? headers)
      (let loop ((hs headers))
        (or (null? hs)
            (and (give-header out (car hs)) (loop (cdr hs)))))
      (rule out "the headers must be a list of (name . value) pairs, not ~a" (shown headers))))

(define (give-body out body)
  (cond ((not body) (zero? (reply-finish! out #f 0)))
        ((string? body) (zero? (reply-finish! out body (string-length body))))
        ((blob? body) (zero? (reply-finish! out body (blob-size body))))
        (else (rule out "the body must be a string, a blob or #f, not ~a" (shown body)))))

(define (give-response out results)
  (let ((n (length results)))
    (cond ((= n 2)
           (and (give-headers out (car results)) (give-body out (cadr results))))
          ((= n 3)
           (and (give-status out (car results))
                (give-headers out (cadr results))
                (give-body out (caddr results))))
          (else
           (rule out "the handler returned ~a value(s), not (values headers body) or (values status headers body)"
                 n)))))

;; The reply (reply.c) says how it ended; nothing to return.
(define-sequenced-callback (httpd_scheme_handle (c-pointer req) (c-pointer out)) void
  (handle-exceptions exn
      (let ((line (condition->line exn)))
        (reply-error! out line (string-length line)))
    (call-with-values
        (lambda () (baton-httpd#handler (make-request req) (request-part req 2 0)))
      (lambda results (give-response out results)))))

(return-to-host)
