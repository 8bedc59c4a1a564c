-- SPDX-License-Identifier: MIT
-- The Lua handler of tests/http/test_compute.py, test_lua_slices.py and
-- test_lua_tcp.py: long computations that run in slices, cheap answers
-- beside them, and waits through the `baton` library (sleep, TCP, HTTP).

local function query(request)
	local path, q = request.target:match("^([^?]*)%??(.*)$")
	local args = {}
	for k, v in q:gmatch("([^&=]+)=([^&]*)") do args[k] = v end
	return path, args
end

-- Compute (no waiting, no blocking) for `seconds` of wall-clock time.
local function compute(seconds)
	local t0, n = baton.clock(), 0
	while baton.clock() - t0 < seconds do n = n + 1 end
	return n
end

local routes = {}

routes["/cheap"] = function()
	return 200, nil, "cheap\n"
end

routes["/long"] = function(_, args)
	local n = compute((tonumber(args.ms) or 500) / 1000)
	return 200, nil, "long " .. n .. "\n"
end

-- The request's headers read only after many slices, while other
-- requests' slices ran on the same state.
routes["/late-header"] = function(request, args)
	compute((tonumber(args.ms) or 50) / 1000)
	return 200, nil, tostring(request.headers["x-id"])
end

routes["/sleep"] = function(_, args)
	local t0 = baton.clock()
	baton.sleep((tonumber(args.ms) or 100) / 1000)
	return 200, nil, string.format("slept %.3f\n", baton.clock() - t0)
end

-- One line to a line-based upstream and its one-line answer.
routes["/upstream"] = function(_, args)
	local sock = baton.tcp()
	sock:settimeout(tonumber(args.timeout) or 5000)
	local ok, err = sock:connect(args.host or "127.0.0.1", tonumber(args.port))
	if not ok then return 502, nil, "connect: " .. err end
	local n, serr = sock:send((args.say or "ping") .. "\n")
	if not n then return 502, nil, "send: " .. serr end
	local line, rerr, partial = sock:receive("*l")
	sock:close()
	if not line then return 504, nil, "receive: " .. rerr .. " " .. tostring(partial) end
	return 200, nil, line
end

-- The receive patterns: a count, then a line, then the rest.
routes["/patterns"] = function(_, args)
	local sock = baton.tcp()
	sock:settimeout(5000)
	assert(sock:connect("127.0.0.1", tonumber(args.port)))
	assert(sock:send("patterns\n"))
	local a = assert(sock:receive(5))
	local b = assert(sock:receive("*l"))
	local c = assert(sock:receive("*a"))
	local d, err = sock:receive(1)
	sock:close()
	return 200, nil, table.concat({ a, b, c, tostring(d), err }, "|")
end

routes["/http"] = function(_, args)
	local res, err = baton.http_get("http://127.0.0.1:" .. args.port .. (args.path or "/"),
		{ timeout = tonumber(args.timeout) or 5000, headers = { ["X-From"] = "baton" } })
	if not res then return 502, nil, "http: " .. err end
	return 200, { ["x-upstream-status"] = res.status }, res.body
end

-- A wait asked for where Lua cannot yield: an error, not a hang.
routes["/sleep-in-sort"] = function()
	local t = { 3, 1, 2 }
	table.sort(t, function(a, b) baton.sleep(0.001) return a < b end)
	return 200, nil, "sorted"
end

return function(request, body)
	local path, args = query(request)
	local route = routes[path]
	if route then return route(request, args, body) end
	return 404, nil, "no such path\n"
end
