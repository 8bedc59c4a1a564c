;; SPDX-License-Identifier: MIT
;;; Guile 3.0 peer of the http suite: the hello world of the 2012 study of Guile's web server, served by
;;; Guile's own (web server) -- single-threaded, blocking, poll-driven.
;;; Usage: guile-3.0 bench/http/guile-hello.scm PORT
;;; The server listens on the loopback address (run-server's default).
(use-modules (web server))

(define port (string->number (cadr (command-line))))

(define (handler request body)
  (values '((content-type . (text/plain)))
          "Hello, World!\n"))

(run-server handler 'http `(#:port ,port))
