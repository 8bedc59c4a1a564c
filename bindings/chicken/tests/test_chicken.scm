;; SPDX-License-Identifier: MIT
;;; The Scheme half of test_chicken.c: sequenced callbacks that allocate.

(include "baton-chicken.scm")
(import scheme (chicken base) (chicken platform) (chicken gc) (chicken foreign)
        baton-chicken)

;; Lists kept alive across calls, so that minor collections promote data
;; into the heap and the heap fills up: that is what makes major ones run.
(define keep (make-vector 64 '()))

;; Builds n fresh pairs holding tid+i+k for k < n, sums them and keeps the
;; list: n*(tid+i) + n(n-1)/2 with n = 16 + i mod 48.
(define-sequenced-callback (stress (int tid) (int i)) long
  (let* ((n (+ 16 (modulo i 48)))
         (lst (let loop ((k 0) (acc '()))
                (if (= k n)
                    acc
                    (loop (+ k 1) (cons (+ tid i k) acc)))))
         (junk (make-string 256 #\x)))
    (vector-set! keep (modulo (+ i tid) 64) lst)
    (let sum ((l lst) (s (string-length junk)))
      (if (null? l) (- s 256) (sum (cdr l) (+ s (car l)))))))

(define-sequenced-callback (force_major) void
  (gc #t))

;; Re-entrant: Scheme calls C (safely), which calls a sequenced callback.
(define-sequenced-callback (inner (int x)) int
  (* x 2))
(define call-inner (foreign-safe-lambda int "test_call_inner" int))
(define-sequenced-callback (outer (int x)) int
  (+ 1 (call-inner x)))

(define-sequenced-callback (echo_string (c-string s)) int
  (string-length s))

;; Raises a condition when x is negative: the caller gets an error code
;; and the message, the process goes on.
(define-sequenced-callback (checked_sqrt (int x)) int
  (if (< x 0)
      (error "negative argument" x)
      (let loop ((r 0)) (if (> (* (+ r 1) (+ r 1)) x) r (loop (+ r 1))))))
(define-sequenced-callback (car_of_nothing) void
  (car '()))

(define booted #t)
(define-sequenced-callback (was_booted) bool
  booted)

(return-to-host)
