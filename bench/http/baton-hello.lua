-- SPDX-License-Identifier: MIT
-- Lua handler of the http suite for baton-httpd (impl "baton-lua"):
--   baton-httpd --port P --workers N --handler lua bench/http/baton-hello.lua
-- The chunk returns the handler. It has the shape of Guile's handler (seed
-- 004): request and body in; status, headers and body out.
return function(request, body)
	return 200, { ["content-type"] = "text/plain" }, "Hello, World!\n"
end
