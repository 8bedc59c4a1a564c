;; SPDX-License-Identifier: MIT
;;; The seq suite's CHICKEN runtime: foo(x) = x + 100 exported
;;; to C with define-external. Booted by seq_chicken.c's init on whichever
;;; stack the variant gives the runtime; returns to the host at once.
(import (chicken platform) (chicken foreign))

(define-external (foo (long x)) long
  (+ x 100))

(return-to-host)
