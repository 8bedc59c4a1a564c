-- SPDX-License-Identifier: MIT
-- The Lua handler of tests/http/test_handlers.py: the target's path picks
-- what it does (the same paths as echo.scm).

-- Which lua_State this is: baton-httpd gives each worker its own, which
-- runs this file once.
local state = tostring({})
local count = 0

local function describe(request, body)
	local out = {
		"method " .. request.method,
		"target " .. request.target,
		"version " .. request.version,
	}
	for _, h in ipairs(request.headers) do
		out[#out + 1] = "header " .. h[1] .. ": " .. h[2]
	end
	-- a repeated field is the list of its values; any case finds it
	local rep = request.headers["X-Rep"]
	out[#out + 1] = "lookup x-rep: " .. (type(rep) == "table" and "list " .. table.concat(rep, ", ")
					  or tostring(rep))
	out[#out + 1] = "lookup host: " .. tostring(request.headers.host)
	out[#out + 1] = "body " .. (body and #body or "none")
	return table.concat(out, "\n") .. "\n"
end

-- n bytes of a pattern the test can check.
local function pattern(n)
	local unit = "0123456789abcdef"
	return string.rep(unit, n // 16) .. unit:sub(1, n % 16)
end

-- One response per rule of docs/httpd.md that it breaks.
local bad = {
	["status-low"] = function() return 99, nil, "x" end,
	["status-high"] = function() return 600, nil, "x" end,
	["status-1xx"] = function() return 101, nil, "x" end,
	["status-type"] = function() return "200", nil, "x" end,
	["header-crlf"] = function() return 200, { ["x-a"] = "a\r\nX-Injected: 1" }, "x" end,
	["header-nul"] = function() return 200, { { "X-A", "a\0b" } }, "x" end,
	["header-name"] = function() return 200, { ["Bad Name"] = "v" }, "x" end,
	["content-length"] = function() return 200, { ["Content-Length"] = 1 }, "x" end,
	["transfer-encoding"] = function() return 200, { ["transfer-encoding"] = "chunked" }, "x" end,
	["connection"] = function() return 200, { { "Connection", "close" } }, "x" end,
	["headers-type"] = function() return 200, "x-a: 1", "x" end,
	["header-value-type"] = function() return 200, { ["x-a"] = true }, "x" end,
	["body-type"] = function() return 200, nil, 42 end,
	["stream-204"] = function() return 204, nil, function() end end,
	["body-204"] = function() return 204, nil, "x" end,
	["too-big"] = function() return 200, nil, pattern(6000000) end,
	["nothing"] = function() return end,
}

-- The request of the previous /kept call: its headers must read as nil
-- once its call is over.
local kept

return function(request, body)
	local path, query = request.target:match("^([^?]*)%??(.*)$")

	if path == "/echo" then
		return 200, { ["content-type"] = "text/plain" }, describe(request, body)
	elseif path == "/kept" then
		local before = kept
		kept = request
		-- the previous request's headers, never read during its call
		return 200, nil, tostring(before and before.headers)
	elseif path == "/spin" then
		-- ms=N: compute (CPU time, no blocking) for N milliseconds
		local ms = tonumber(query:match("ms=(%d+)")) or 0
		local t0, n = os.clock(), 0
		while (os.clock() - t0) * 1000 < ms do n = n + 1 end
		return 200, nil, "spun " .. n .. "\n"
	elseif path == "/body" then
		return 200, { { "Content-Type", "application/octet-stream" } }, body
	elseif path == "/big" then
		return 200, nil, pattern(tonumber(query:match("n=(%d+)")))
	elseif path:match("^/status/%d+$") then
		return tonumber(path:match("%d+")), {
			{ "X-Custom", "yes" }, { "Set-Cookie", "a=1" }, { "Set-Cookie", "b=2" },
			["content-type"] = "text/plain; charset=utf-8",
			["x-number"] = 42,
			["x-list"] = { "l1", "l2" },
		}, "custom"
	elseif path == "/empty" then
		return 204
	elseif path == "/state" then
		-- Busy for a moment (?spin=MS), so that the worker running it has
		-- other connections waiting and an idle worker steals them.
		local until_ = os.clock() + (tonumber(query:match("spin=(%d+)")) or 0) / 1000
		while os.clock() < until_ do end
		count = count + 1
		return 200, nil, state .. " " .. count
	elseif path == "/error" then
		error("boom")
	elseif path == "/runtime-error" then
		local t = nil
		return t.field
	elseif path:match("^/bad/") and bad[path:sub(6)] then
		return bad[path:sub(6)]()
	end
	return 404, nil, "no such test path\n"
end
