;; SPDX-License-Identifier: MIT
;;; The Scheme handler of tests/http/test_scheme_limits.py: routes that never
;;; return, one behind the handler's own exception handler, one that
;;; allocates without bound, beside one that answers at once.
(import (chicken base) (chicken condition))

(define (spin) (let loop ((n 0)) (loop (+ n 1))))

;; An error raised in the loop would be caught here and the loop started
;; again: a limit must not be an error the handler can catch.
(define (stubborn)
  (let again ()
    (handle-exceptions exn (again) (spin))))

(define (hog)
  (let loop ((l '()) (n 0))
    (loop (cons (make-string 100 #\x) l) (+ n 1))))

(lambda (request body)
  (let ((path (cdr (assq 'path request))))
    (cond ((string=? path "/spin") (spin))
          ((string=? path "/stubborn") (stubborn))
          ((string=? path "/hog") (hog))
          (else (values 200 '((content-type . "text/plain")) "ok\n")))))
