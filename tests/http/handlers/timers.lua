-- SPDX-License-Identifier: MIT
-- The Lua handler of tests/http/test_lua_timers.py: baton.after and
-- baton.every timers, and threads (baton.spawn, baton.wait_any).

local fired = {}      -- what the timers did, in order
local ticks = 0
local ticker          -- the every-timer of /every
local keep = {}       -- pending timers of /many

local routes = {}

routes["/after"] = function(args)
	local ok, err = baton.after(tonumber(args.ms) or 50, function(what)
		fired[#fired + 1] = what
	end, args.what or "x")
	if not ok then return 503, nil, err end
	return 200, nil, "set\n"
end

routes["/fired"] = function()
	return 200, nil, table.concat(fired, ",") .. "\n"
end

routes["/every"] = function(args)
	if ticker then ticker:cancel() end
	ticks = 0
	ticker = baton.every(tonumber(args.ms) or 20, function()
		ticks = ticks + 1
		if args.say then io.stderr:write("tick " .. args.say .. "\n") end
	end)
	return 200, nil, "every\n"
end

routes["/ticks"] = function()
	return 200, nil, ticks .. "\n"
end

routes["/stop"] = function()
	return 200, nil, tostring(ticker and ticker:cancel()) .. "\n"
end

-- n timers a minute away, kept pending.
routes["/many"] = function(args)
	local n = tonumber(args.n) or 1000
	for i = 1, n do
		local t, err = baton.after(60000, function() end)
		if not t then return 503, nil, i .. ": " .. err .. "\n" end
		keep[#keep + 1] = t
	end
	return 200, nil, #keep .. "\n"
end

routes["/drop"] = function()
	local n = 0
	for _, t in ipairs(keep) do if t:cancel() then n = n + 1 end end
	keep = {}
	collectgarbage()
	return 200, nil, n .. "\n"
end

routes["/timer-error"] = function()
	baton.after(1, function() error("timer boom") end)
	return 200, nil, "set\n"
end

-- Two threads, the first to end wins; the other is cancelled.
routes["/race"] = function(args)
	local slow = baton.spawn(function() baton.sleep(5) return "slow" end)
	local fast = baton.spawn(function(ms)
		baton.sleep(ms / 1000)
		return "fast"
	end, tonumber(args.ms) or 20)
	local th, ok, what = baton.wait_any({ slow, fast })
	local cancelled = slow:cancel()
	return 200, nil, table.concat({ what, tostring(th == fast), tostring(ok),
		tostring(cancelled) }, " ") .. "\n"
end

-- A thread left running when the handler returns: cancelled with it.
routes["/orphan"] = function()
	baton.spawn(function() baton.sleep(30) end)
	return 200, nil, "left\n"
end

return function(request, body)
	local route = routes[request.path]
	if route then return route(request.args, body) end
	return 200, nil, "ok\n"
end
