;; SPDX-License-Identifier: MIT
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
;;; request is an alist ((method . GET) (target . "/a%20b?x=1") (version
;;; . "1.1") (path . "/a b") (query . "x=1") (args . (("x" . "1")))
;;; (remote-addr . "127.0.0.1") (remote-port . 51234) (headers . ((host .
;;; "x") (accept "a" "b") ...))): the method a symbol, header names
;;; lower-case symbols, a repeated header or argument a list of its values;
;;; body a u8vector (R7RS bytevector) of the body's bytes, or #f for none.
;;; It returns (values headers body) or (values status headers body)
;;; (docs/httpd.md); a body that is a procedure is a stream, called for
;;; each piece until it returns #f. The response is handed to C (reply.c)
;;; field by field while still on this stack: the collector moves strings
;;; once Scheme runs again.
;;;
;;; Every condition the handler raises is caught here and becomes a 500
;;; with one log line; one that reached CHICKEN's top-level handler would
;;; end the process.
;;;
;;; Limits (docs/httpd.md, Limits): compiled code (and eval) counts down
;;; C_timer_interrupt_counter at procedure entries and, when it runs out,
;;; the runtime calls ##sys#interrupt-hook with reason 255 at its next safe
;;; point (every 10000 procedure calls: tens of microseconds of Scheme).
;;; Our hook asks C whether the request being handled is past its deadline,
;;; its CPU budget or its memory budget (scheme_handler.c) and, if so,
;;; jumps to the escape continuation its call captured: the handler is
;;; abandoned there, past any handle-exceptions or guard of its own (which
;;; could catch an error and go on looping), and its call returns to C,
;;; which answers 504 (time) or 500 (memory). Else it calls the hook that
;;; was there before (the runtime's own).

(include "baton-chicken.scm")
(import scheme (chicken base) (chicken foreign) (chicken platform)
        (chicken condition) (chicken blob) (chicken format) (chicken load)
        (chicken port) (chicken string) (chicken gc) (srfi 4)
        baton-chicken)

(foreign-declare "#include \"handlers.h\"")

(define baton-httpd#handler #f)

(define req-size (foreign-lambda size_t "httpd_scm_req_size" c-pointer int int))
(define req-copy! (foreign-lambda void "httpd_scm_req_copy" c-pointer int int scheme-pointer))
(define req-copy-bytes! (foreign-lambda void "httpd_scm_req_copy" c-pointer int int u8vector))
(define req-count (foreign-lambda int "httpd_scm_req_count" c-pointer int))
(define reply-stream! (foreign-lambda int "httpd_scm_reply_stream" c-pointer long))
(define reply-piece! (foreign-lambda int "httpd_reply_piece" c-pointer scheme-pointer size_t))
(define reply-status! (foreign-lambda int "httpd_reply_status" c-pointer long))
(define reply-header!
  (foreign-lambda int "httpd_reply_header" c-pointer scheme-pointer size_t scheme-pointer size_t))
(define reply-finish! (foreign-lambda int "httpd_reply_finish" c-pointer scheme-pointer size_t))
(define reply-rule! (foreign-lambda void "httpd_scm_rule" c-pointer scheme-pointer size_t))
(define reply-error! (foreign-lambda int "httpd_reply_error" c-pointer scheme-pointer size_t))
(define call-begin! (foreign-lambda void "httpd_scm_call_begin" c-pointer size_t))
(define call-end! (foreign-lambda void "httpd_scm_call_end" c-pointer))
(define stop-reason (foreign-lambda int "httpd_scm_stop_reason" size_t))

;;; Limits

;; The bytes of the heap in use: its half (the fromspace) less what is free
;; at its top, as memory-statistics counts them, without its major GC.
(define heap-used*
  (foreign-lambda* size_t ((size_t heap))
    "C_return(heap / 2 - (size_t)((char *)C_fromspace_limit - (char *)C_fromspace_top));"))
(define (heap-size) (heap-used* (vector-ref (##sys#memory-info) 0)))

;; The escape of the call in progress (a continuation of the sequenced
;; callback that handles a request), or #f.
(define current-escape #f)

(set! ##sys#interrupt-hook
  (let ((old ##sys#interrupt-hook))
    (lambda (reason state)
      (when (and (eq? reason 255) current-escape)   ; C_TIMER_INTERRUPT_NUMBER
        (let ((why (stop-reason (heap-size))))
          (when (eq? why 3)                          ; over its memory: collect first
            (gc #t)
            (set! why (stop-reason (heap-size))))
          (unless (eq? why 0)
            (current-escape why))))
      (old reason state))))

;; (thunk) with the limits of ctx (scheme_handler.c) enforced; its value,
;; or (stopped why) when a limit stopped it (1 deadline, 2 CPU, 3 memory).
(define (with-limits ctx thunk stopped)
  (let ((result (call/cc
                 (lambda (k)
                   (set! current-escape k)
                   (call-begin! ctx (heap-size))
                   (cons 'done (thunk))))))
    (set! current-escape #f)
    (call-end! ctx)
    (if (pair? result)
        (cdr result)
        (begin (when (eq? result 3) (gc #t)) ; what it held goes back
               (stopped result)))))

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

;; The parts' numbers in scheme_handler.c (HTTPD_SCM_*).
(define part:method 0) (define part:target 1) (define part:body 2) (define part:name 3)
(define part:value 4) (define part:path 5) (define part:query 6) (define part:remote 7)
(define part:arg-key 8) (define part:arg-value 9)

(define (request-part req part i)
  (let ((s (make-string (req-size req part i))))
    (req-copy! req part i s)
    s))

(define (request-body req)
  (and (= (req-count req 3) 1)
       (let ((v (make-u8vector (req-size req part:body 0))))
         (req-copy-bytes! req part:body 0 v)
         v)))

;; ((k . v) ...) in order -> the same keys once each, in order of first
;; appearance; a key given twice or more has the list of its values.
(define (group pairs)
  (let loop ((ps pairs) (acc '()))
    (if (null? ps)
        (reverse acc)
        (let* ((k (caar ps)) (v (cdar ps)) (e (assoc k acc)))
          (cond ((not e) (loop (cdr ps) (cons (cons k v) acc)))
                ((string? (cdr e)) (set-cdr! e (list (cdr e) v)) (loop (cdr ps) acc))
                (else (set-cdr! e (append (cdr e) (list v))) (loop (cdr ps) acc)))))))

;; The n pairs (make i) for i below n, in order.
(define (pairs n make)
  (let loop ((i (- n 1)) (acc '()))
    (if (< i 0) acc (loop (- i 1) (cons (make i) acc)))))

(define (make-request req)
  `((method . ,(string->symbol (request-part req part:method 0)))
    (target . ,(request-part req part:target 0))
    (version . ,(if (= (req-count req 2) 1) "1.1" "1.0"))
    (path . ,(request-part req part:path 0))
    (query . ,(and (= (req-count req 4) 1) (request-part req part:query 0)))
    (args . ,(group (pairs (req-count req 1)
                           (lambda (i) (cons (request-part req part:arg-key i)
                                             (request-part req part:arg-value i))))))
    (remote-addr . ,(request-part req part:remote 0))
    (remote-port . ,(req-count req 5))
    (headers . ,(group (pairs (req-count req 0)
                              (lambda (i) (cons (string->symbol (request-part req part:name i))
                                                (request-part req part:value i))))))))

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

;; Streams in flight: key -> the procedure that makes their pieces. Several
;; may be open at once (the pieces of one interleave with other requests).
(define streams '())
(define stream-key 0)

(define (give-stream out proc)
  (set! stream-key (+ stream-key 1))
  (set! streams (cons (cons stream-key proc) streams))
  (zero? (reply-stream! out stream-key)))

(define (give-body out body)
  (cond ((not body) (zero? (reply-finish! out #f 0)))
        ((string? body) (zero? (reply-finish! out body (string-length body))))
        ((blob? body) (zero? (reply-finish! out body (blob-size body))))
        ((u8vector? body)
         (let ((b (u8vector->blob/shared body)))
           (zero? (reply-finish! out b (blob-size b)))))
        ((procedure? body) (give-stream out body))
        (else (rule out "the body must be a string, a blob, a bytevector, a procedure or #f, not ~a"
                    (shown body)))))

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

;; The reply (reply.c) says how it ended; a limit that stopped the handler
;; is C's to tell (ctx). Nothing to return.
(define-sequenced-callback (httpd_scheme_handle (c-pointer req) (c-pointer out)
                                                (c-pointer ctx)) void
  (with-limits ctx
    (lambda ()
      (handle-exceptions exn
          (let ((line (condition->line exn)))
            (reply-error! out line (string-length line)))
        (call-with-values
            (lambda () (baton-httpd#handler (make-request req) (request-body req)))
          (lambda results (give-response out results)))))
    (lambda (why) #f)))

;; A stream's next piece into the reply: 1, or 0 at its end (#f or an
;; end-of-file object) or once the reply is broken.
(define (give-piece out piece)
  (cond ((or (not piece) (eof-object? piece)) 0)
        ((string? piece) (if (zero? (reply-piece! out piece (string-length piece))) 1 0))
        ((blob? piece) (if (zero? (reply-piece! out piece (blob-size piece))) 1 0))
        ((u8vector? piece)
         (let ((b (u8vector->blob/shared piece)))
           (if (zero? (reply-piece! out b (blob-size b))) 1 0)))
        (else (rule out "a stream's piece must be a string, a blob, a bytevector, or #f at the end, not ~a"
                    (shown piece))
              0)))

(define-sequenced-callback (httpd_scheme_next (long key) (c-pointer out) (c-pointer ctx)) int
  (with-limits ctx
    (lambda ()
      (handle-exceptions exn
          (let ((line (condition->line exn)))
            (reply-error! out line (string-length line))
            0)
        (let ((e (assv key streams)))
          (if e (give-piece out ((cdr e))) 0))))
    (lambda (why) 0)))

(define-sequenced-callback (httpd_scheme_drop (long key)) void
  (set! streams (let loop ((ss streams))
                  (cond ((null? ss) '())
                        ((eqv? (caar ss) key) (cdr ss))
                        (else (cons (car ss) (loop (cdr ss))))))))

(return-to-host)
