;; SPDX-License-Identifier: MIT
;;; CHICKEN Scheme handler of the http suite for baton-httpd (impl
;;; "baton-scheme"):
;;;   baton-httpd --port P --workers N --handler scheme bench/http/baton-hello.scm
;;; The file's last expression is the handler, with the shape of Guile's
;;; web handlers: request and body in; response headers and body out.
(lambda (request body)
  (values '((content-type . (text/plain)))
          "Hello, World!\n"))
