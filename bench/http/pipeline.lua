-- SPDX-License-Identifier: MIT
-- wrk script for the http suite's pipelined rows (bench/http/pipeline.py):
-- every request wrk sends is DEPTH requests for GET / in one write, the
-- next batch after the last answer of the previous one; wrk counts each
-- answer as a request.  Usage: wrk -s pipeline.lua URL -- DEPTH (16).
-- wrk's latency figures are per batch, not per request.

local batch

init = function(args)
   local depth = tonumber(args[1]) or 16
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format("GET", "/")
   end
   batch = table.concat(r)
end

request = function()
   return batch
end
