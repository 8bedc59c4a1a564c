-- SPDX-License-Identifier: MIT
-- The Lua handler of tests/http/test_protocol.py: counts the requests that
-- reach it (GET /calls answers the count without counting itself) and
-- answers the status that the path names, /status/N, without a body.
local calls = 0

return function(request, body)
	local path = request.target:match("^[^?]*")
	if path == "/calls" then
		return 200, nil, tostring(calls)
	end
	calls = calls + 1
	local code = path:match("^/status/(%d+)$")
	if code then
		return tonumber(code), { ["x-from"] = "handler" }, nil
	end
	if path == "/missing" then
		return 404, { ["content-type"] = "text/plain" }, "no such thing\n"
	end
	return 200, { ["x-target"] = request.target }, "target " .. request.target .. "\n"
end
