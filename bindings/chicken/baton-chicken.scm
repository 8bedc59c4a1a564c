;; SPDX-License-Identifier: MIT
;;; baton-chicken.scm - sequenced callbacks: Scheme procedures that any C
;;; thread may call as ordinary C functions (see baton_chicken.h).
;;;
;;;   (include "baton-chicken.scm")      ; csc -embedded -I <this dir> ...
;;;   (import baton-chicken (chicken platform))
;;;
;;;   (define-sequenced-callback (foo (long x)) long
;;;     (+ x 100))
;;;
;;;   (return-to-host)                   ; ends the boot, back to C
;;;
;;; (define-sequenced-callback (NAME (TYPE VAR) ...) RTYPE BODY ...)
;;; takes the argument and result types of define-external and generates:
;;;
;;;   - (define-external (baton_scm_NAME (TYPE VAR) ...) RTYPE BODY ...),
;;;     the Scheme body, entered only on the runtime's dedicated stack;
;;;   - in C: a request struct holding the arguments and the result, a
;;;     trampoline that unpacks it and calls baton_scm_NAME, and the public
;;;     entries
;;;         RTYPE NAME(T0 a0, ...);              (aborts on error)
;;;         int NAME_try(T0 a0, ..., RTYPE *ret); (returns a baton code)
;;;     which put the request on the caller's stack and hand the trampoline
;;;     to the sequencer (baton_chicken_call).
;;;
;;; NAME must be a C identifier. The C spelling of each type is the one the
;;; CHICKEN compiler itself gives define-external (so registered foreign
;;; types work); a small table covers the common types should that internal
;;; procedure ever be missing.

(module baton-chicken (define-sequenced-callback baton-chicken-report)

(import scheme (chicken base) (chicken foreign) (chicken condition) (chicken port))

;; A condition raised by a callback's body, for its C caller: the message
;; print-error-message gives, kept until the trampoline takes it
;; (baton_chicken_take_error_); the body's result is then a default value.
(define baton-chicken-raise (foreign-lambda void "baton_chicken_raise_" c-string))
(define (baton-chicken-report exn)
  (baton-chicken-raise
   (call-with-output-string (lambda (port) (print-error-message exn port)))))
(import-for-syntax scheme (chicken base) (chicken syntax))

(define-syntax define-sequenced-callback
  (er-macro-transformer
   (lambda (form rename compare)
     ;; Fallback C spellings, matching define-external's in CHICKEN 5.3.
     (define baton-ctypes
       '((int . "int") (integer . "int") (unsigned-int . "unsigned int")
         (unsigned-integer . "unsigned int") (long . "long")
         (unsigned-long . "unsigned long") (short . "short")
         (unsigned-short . "unsigned short") (char . "C_char")
         (unsigned-char . "unsigned C_char") (bool . "int") (float . "float")
         (double . "double") (number . "double") (size_t . "size_t")
         (ssize_t . "ssize_t") (int32 . "C_s32") (unsigned-int32 . "C_u32")
         (integer32 . "C_s32") (unsigned-integer32 . "C_u32")
         (int64 . "C_s64") (unsigned-int64 . "C_u64")
         (integer64 . "C_s64") (unsigned-integer64 . "C_u64")
         (c-pointer . "void *") (c-string . "char *") (void . "void")))

     ;; "TYPE NAME" in C for foreign type `type`.
     (define (baton-cdecl type name)
       (let ((ftd (and (##sys#symbol-has-toplevel-binding?
                        'chicken.compiler.c-backend#foreign-type-declaration)
                       (##sys#slot
                        'chicken.compiler.c-backend#foreign-type-declaration 0))))
         (cond ((procedure? ftd) (ftd type name))
               ((and (symbol? type) (assq type baton-ctypes))
                => (lambda (p) (string-append (cdr p) " " name)))
               (else (syntax-error 'define-sequenced-callback
                                   "no C spelling known for this type" type)))))

     (define (baton-c-identifier? s)
       (and (positive? (string-length s))
            (not (char-numeric? (string-ref s 0)))
            (let loop ((i 0))
              (or (= i (string-length s))
                  (let ((c (string-ref s i)))
                    (and (or (char-alphabetic? c) (char-numeric? c)
                             (char=? c #\_))
                         (loop (+ i 1))))))))

     (define (baton-join strs sep)
       (if (null? strs)
           ""
           (let loop ((acc (car strs)) (rest (cdr strs)))
             (if (null? rest)
                 acc
                 (loop (string-append acc sep (car rest)) (cdr rest))))))

     ;; What a callback whose body raised returns (its caller ignores it).
     (define (baton-default-value type)
       (cond ((eq? type 'void) '(void))
             ((memq type '(float double number)) 0.0)
             ((memq type '(int integer unsigned-int unsigned-integer long
                           unsigned-long short unsigned-short size_t ssize_t
                           int32 unsigned-int32 integer32 unsigned-integer32
                           int64 unsigned-int64 integer64 unsigned-integer64))
              0)
             ((eq? type 'char) #\nul)
             ((eq? type 'unsigned-char) #\nul)
             (else #f))) ; bool, strings, pointers, objects

     ;; The C text for one callback: prototype of the define-external, request
     ;; struct, trampoline, NAME and NAME_try.
     (define (baton-callback-c name types rtype)
       (let* ((n (length types))
              (vars (let loop ((i 0) (acc '()))
                      (if (= i n)
                          (reverse acc)
                          (loop (+ i 1)
                                (cons (string-append "a" (number->string i))
                                      acc)))))
              (void? (eq? rtype 'void))
              (impl (string-append "baton_scm_" name))
              (req (string-append "baton_req_" name))
              (tramp (string-append "baton_tramp_" name))
              (params (map baton-cdecl types vars))
              (plist (if (null? params) "void" (baton-join params ", ")))
              (rdecl (baton-cdecl rtype ""))
              (rptr (baton-cdecl rtype "*ret"))
              (call (string-append impl "(" (baton-join
                                             (map (lambda (v)
                                                    (string-append "r->" v))
                                                  vars)
                                             ", ")
                                   ")"))
              (init (string-append
                     "struct " req " r = { "
                     (if (null? vars)
                         ".baton_err = 0"
                         (baton-join (map (lambda (v)
                                            (string-append "." v " = " v))
                                          vars)
                                     ", "))
                     " };\n"))
              (members (string-append
                        (apply string-append
                               (map (lambda (p) (string-append "\t" p ";\n"))
                                    params))
                        (if void? "" (string-append "\t" (baton-cdecl rtype "ret") ";\n"))
                        "\tchar *baton_err;\n")))
         (string-append
          "#include <baton_chicken.h>\n"
          rdecl " " impl "(" plist ");\n"
          "struct " req " {\n" members "};\n"
          "static void *" tramp "(void *p)\n{\n"
          (string-append "\tstruct " req " *r = p;\n\n")
          (if void?
              (string-append "\t" call ";\n")
              (string-append "\tr->ret = " call ";\n"))
          "\tr->baton_err = baton_chicken_take_error_();\n"
          "\treturn NULL;\n}\n"
          rdecl " " name "(" plist ")\n{\n\t" init
          "\tbaton_chicken_call_or_die(" tramp ", &r, \"" name "\");\n"
          "\tbaton_chicken_die_on_error_(r.baton_err, \"" name "\");\n"
          (if void? "" "\treturn r.ret;\n")
          "}\n"
          "int " name "_try("
          (baton-join (append params (if void? '() (list rptr))) ", ")
          (if (and (null? params) void?) "void" "")
          ")\n{\n\t" init
          "\tint rc = baton_chicken_call(" tramp ", &r, NULL);\n\n"
          "\tif (rc == BATON_OK && r.baton_err)\n"
          "\t\treturn baton_chicken_fail_(r.baton_err);\n"
          (if void?
              ""
              "\tif (rc == BATON_OK && ret)\n\t\t*ret = r.ret;\n")
          "\treturn rc;\n}\n")))

     (##sys#check-syntax 'define-sequenced-callback form
                         '(_ (symbol . #((_ symbol) 0)) _ . #(_ 1)))
     (let* ((head (cadr form))
            (name (symbol->string (car head)))
            (args (cdr head))
            (rtype (caddr form))
            (body (cdddr form)))
       (unless (baton-c-identifier? name)
         (syntax-error 'define-sequenced-callback
                       "the name must be a C identifier" (car head)))
       `(,(rename 'begin)
         (,(rename 'foreign-declare)
          ,(baton-callback-c name (map car args) rtype))
         (,(rename 'define-external)
          (,(string->symbol (string-append "baton_scm_" name)) ,@args)
          ,rtype
          ;; A condition the body raises goes to the caller (NAME_try
          ;; returns BATON_CHICKEN_ERROR), not to CHICKEN's toplevel
          ;; handler, which would end the process.
          (,(rename 'handle-exceptions) exn
           (,(rename 'begin) (,(rename 'baton-chicken-report) exn)
            ,(baton-default-value rtype))
           ,@body)))))))

)
