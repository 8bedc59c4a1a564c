-- SPDX-License-Identifier: MIT
-- The Lua handler of tests/http/test_lua_limits.py: routes that never
-- return (in plain Lua, in a sort comparator, in a coroutine, behind
-- pcall), one that allocates without bound, one that allocates a little,
-- and one that answers at once.

local function spin() local n = 0 while true do n = n + 1 end end

local routes = {}

routes["/spin"] = spin

routes["/spin-in-sort"] = function()
	table.sort({ 3, 1, 2 }, function() spin() end)
end

routes["/spin-in-coroutine"] = function()
	coroutine.wrap(spin)()
end

-- Catches every error and loops again: a limit must still stop it.
routes["/stubborn"] = function()
	while true do pcall(spin) end
end

-- Allocates without bound: a table of distinct strings.
routes["/hog"] = function()
	local t = {}
	while true do t[#t + 1] = string.rep("x", 1000) .. #t end
end

-- A megabyte or so, then an answer.
routes["/some"] = function()
	local t = {}
	for i = 1, 1000 do t[i] = string.rep("y", 1000) .. i end
	return 200, nil, "some " .. #t .. "\n"
end

-- Computes for ms milliseconds (wall clock), then answers.
routes["/compute"] = function(request)
	local ms = tonumber(request.args.ms) or 100
	local t0, n = baton.clock(), 0
	while baton.clock() - t0 < ms / 1000 do n = n + 1 end
	return 200, nil, "computed " .. n .. "\n"
end

-- A stream whose second piece never comes.
routes["/stream-spin"] = function()
	local i = 0
	return 200, nil, function()
		i = i + 1
		if i == 1 then return "first\n" end
		spin()
	end
end

return function(request, body)
	local route = routes[request.path]
	if route then return route(request, body) end
	return 200, { ["content-type"] = "text/plain" }, "ok\n"
end
