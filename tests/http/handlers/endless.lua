-- SPDX-License-Identifier: MIT
-- A route that never returns (/spin) beside one that does: what
-- --drain-timeout and --handler-timeout are for.
return function(request, body)
  if request.target == "/spin" then
    local n = 0
    while true do n = n + 1 end
  end
  return 200, { ["Content-Type"] = "text/plain" }, "ok\n"
end
