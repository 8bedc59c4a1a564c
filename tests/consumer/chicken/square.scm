;; SPDX-License-Identifier: MIT
;;; A sequenced callback compiled outside the baton tree.
(include "baton-chicken.scm")
(import scheme (chicken base) (chicken platform) baton-chicken)
(define-sequenced-callback (square (int a)) int
  (if (< a 0) (error "negative" a) (* a a)))
(return-to-host)
