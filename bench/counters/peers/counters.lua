-- SPDX-License-Identifier: MIT
-- counters.lua - counters benchmark, impls "lua" (Lua 5.4) and "luajit"
-- (LuaJIT 2.1), both peers.
--
-- Each counter is a Lua coroutine whose private integer `i` is a local of its
-- suspended function; one resume is coroutine.resume(co), which runs
-- `i = i + 1` and stops at the next coroutine.yield().  N coroutines are
-- created (not started) outside the timed region; each of R runs times M
-- passes over all N counters.
--
-- Clock: the standard library has no monotonic wall clock, so this uses
-- os.clock(), the CPU time of the process (clock(3)).  For a single-threaded,
-- CPU-bound loop that neither sleeps nor does I/O, CPU time equals elapsed
-- time except for time stolen by other processes, which it leaves out.
--
-- Anti-optimisation: none is needed.  LuaJIT compiles the loop and the
-- coroutine body into traces stitched around coroutine.resume/yield, which
-- stay real (uncompiled) builtin calls; `luajit -jv` shows the "stitch"
-- traces.  The final check reads `i` back from every suspended coroutine
-- with debug.getlocal.
--
-- The impl name is --impl NAME if given, else "luajit" when the global `jit`
-- exists, else "lua".  Written for both Lua 5.4 and LuaJIT (Lua 5.1 syntax:
-- no integer division, no goto, no bit operators).
--
-- Usage: lua5.4|luajit counters.lua [--counters N] [--resumes M] [--runs R] [--impl NAME]

local INT_MAX = 2147483647

local USAGE = "usage: counters.lua [--counters N] [--resumes M] [--runs R] [--impl NAME]\n"
    .. "  --counters N   number of counters (default 20000)\n"
    .. "  --resumes M    resumes of each counter per run (default 300)\n"
    .. "  --runs R       timed runs, the median is reported (default 1)\n"
    .. "  --impl NAME    impl name in the JSON line (default: luajit under LuaJIT, else lua)\n"
    .. "Prints one JSON line on stdout (docs/bench-format.md).\n"

local function usage_error(msg)
    io.stderr:write("counters.lua: " .. msg .. "\n" .. USAGE)
    os.exit(2)
end

local function parse_args(args)
    local opts = { counters = 20000, resumes = 300, runs = 1 }
    local limits = { counters = 100000000, resumes = INT_MAX, runs = 100000 }
    local impl = nil
    local i = 1
    while i <= #args do
        local a = args[i]
        if a == "-h" or a == "--help" then
            io.stderr:write(USAGE)
            os.exit(0)
        end
        local name = string.match(a, "^%-%-([%a%-]+)$")
        if name == nil or (name ~= "impl" and limits[name] == nil) then
            usage_error("unknown argument '" .. a .. "'")
        end
        local v = args[i + 1]
        if v == nil then
            usage_error(a .. " needs a value")
        end
        if name == "impl" then
            if not string.match(v, "^[%w%.%-_]+$") then
                usage_error("--impl wants a name of letters, digits, '.', '-', '_', got '" .. v .. "'")
            end
            impl = v
        else
            local n = string.match(v, "^%d+$") and tonumber(v) or nil
            if n == nil or n < 1 or n > limits[name] then
                usage_error(a .. " wants an integer in [1, " .. limits[name] .. "], got '" .. v .. "'")
            end
            opts[name] = n
        end
        i = i + 2
    end
    if opts.runs * opts.resumes > INT_MAX then
        usage_error("--runs * --resumes must not exceed " .. INT_MAX)
    end
    if impl == nil then
        if jit ~= nil then impl = "luajit" else impl = "lua" end
    end
    return opts, impl
end

local function Counter()
    local i = 0
    while true do
        i = i + 1
        coroutine.yield()
    end
end

-- The timed loop: outer loop over resumes, inner loop over counters.
local function run_all(counters, n, m)
    local resume = coroutine.resume
    for _ = 1, m do
        for j = 1, n do
            resume(counters[j])
        end
    end
end

-- The value of local `i` of the suspended Counter in coroutine co, or nil
-- (a coroutine that never ran has no level 1: getlocal raises an error).
local function counter_value(co)
    local idx = 1
    while true do
        local ok, name, value = pcall(debug.getlocal, co, 1, idx)
        if not ok or name == nil then return nil end
        if name == "i" then return value end
        idx = idx + 1
    end
end

local function fmt(x)
    return string.format("%.3f", x)
end

local function main(args)
    local opts, impl = parse_args(args)
    local n, m, runs = opts.counters, opts.resumes, opts.runs

    -- Construction: outside the timed region.
    local counters = {}
    for j = 1, n do
        counters[j] = coroutine.create(Counter)
    end

    local samples = {}
    local ops = n * m * 1.0
    for r = 1, runs do
        local t0 = os.clock()
        run_all(counters, n, m)
        local t1 = os.clock()
        samples[r] = (t1 - t0) * 1e9 / ops
    end

    local want = runs * m
    for j = 1, n do
        local got = counter_value(counters[j])
        if coroutine.status(counters[j]) ~= "suspended" or got ~= want then
            io.stderr:write(string.format("counters.lua: counter %d is %s (%s), expected %d\n",
                j - 1, tostring(got), coroutine.status(counters[j]), want))
            os.exit(1)
        end
    end

    local sorted = {}
    for r = 1, runs do sorted[r] = samples[r] end
    table.sort(sorted)
    local median
    if runs % 2 == 1 then
        median = sorted[(runs + 1) / 2]
    else
        median = (sorted[runs / 2] + sorted[runs / 2 + 1]) / 2
    end
    local parts = {}
    for r = 1, runs do parts[r] = fmt(samples[r]) end

    io.stdout:write(string.format(
        '{"suite":"counters","impl":"%s","peer":true,"metric":"ns_per_op","value":%s,'
        .. '"unit":"ns","params":{"counters":%d,"resumes":%d},"runs":%d,"min":%s,"max":%s,'
        .. '"samples":[%s]}\n',
        impl, fmt(median), n, m, runs, fmt(sorted[1]), fmt(sorted[runs]),
        table.concat(parts, ",")))
    io.stdout:flush()
end

main(arg)
