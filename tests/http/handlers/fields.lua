-- SPDX-License-Identifier: MIT
-- The Lua handler of tests/http/test_request_fields.py: the request's
-- fields as JSON, many response headers, and streamed responses (the same
-- paths as fields.scm).

local function json(v)
	local t = type(v)
	if t == "nil" then
		return "null"
	elseif t == "number" or t == "boolean" then
		return tostring(v)
	elseif t == "string" then
		return '"' .. v:gsub('[%c"\\]', function(c)
			return string.format("\\u%04x", c:byte())
		end) .. '"'
	end
	local out = {}
	if #v > 0 then
		for _, x in ipairs(v) do out[#out + 1] = json(x) end
		return "[" .. table.concat(out, ",") .. "]"
	end
	for k, x in pairs(v) do
		if type(k) == "string" then out[#out + 1] = json(k) .. ":" .. json(x) end
	end
	table.sort(out)
	return "{" .. table.concat(out, ",") .. "}"
end

-- Compute (CPU time, no blocking) for ms milliseconds.
local function spin(ms)
	local t0 = os.clock()
	while (os.clock() - t0) * 1000 < ms do end
end

local function fields(request, body)
	local h = request.headers
	local named = {}
	for k, v in pairs(h) do
		if type(k) == "string" then named[k] = v end
	end
	return json({
		method = request.method, target = request.target, version = request.version,
		path = request.path, query = request.query, args = request.args,
		remote_addr = request.remote_addr, remote_port = request.remote_port,
		headers = named,
		lookup = {
			["Content-Type"] = h["Content-Type"], content_type = h.content_type,
			X_REP = h.X_REP, ["X-Rep"] = h["X-Rep"], missing = h["x-missing"],
		},
		body = body, body_type = type(body),
	})
end

return function(request, body)
	local path = request.path
	if path == "/fields" or path:match("^/fields/") then
		return 200, { ["content-type"] = "application/json" }, fields(request, body)
	elseif path == "/many-headers" then
		local h = {}
		for i = 1, 17 do h[#h + 1] = { "X-H" .. i, "v" .. i } end
		for i = 1, 3 do h[#h + 1] = { "Set-Cookie", "c" .. i .. "=" .. i } end
		return 200, h, "many"
	elseif path == "/stream" then
		-- n pieces; before each piece after the first the generator
		-- computes for ms milliseconds
		local n = tonumber(request.args.n) or 3
		local ms = tonumber(request.args.ms) or 0
		local i = 0
		return 200, { ["content-type"] = "text/plain", ["x-stream"] = "yes" }, function()
			i = i + 1
			if i > n then return nil end
			if i > 1 then spin(ms) end
			return "piece " .. i .. "\n"
		end
	elseif path == "/stream-big" then
		-- pieces of 256 KiB: written by the connection while the client reads
		-- (request.args is read here: after the call its unread parts are nil)
		local piece, n = string.rep("x", 262144), tonumber(request.args.n)
		local i = 0
		return 200, nil, function()
			i = i + 1
			if i <= n then return piece end
		end
	elseif path == "/stream-error" then
		local i = 0
		return 200, nil, function()
			i = i + 1
			if i == 1 then return "first\n" end
			error("stream broke")
		end
	end
	return 404, nil, "no such test path\n"
end
