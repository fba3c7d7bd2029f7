-- tables.lua [N=150000]: Lua 5.4 or LuaJIT under comex: a table of N tables
-- walked and checked in order, and a table of N/8 strings sorted; prints
-- checksums, exits 1 on a mismatch.
local n = tonumber(arg[1]) or 150000
-- a collection cycle only when the heap has grown tenfold: every cycle
-- sweeps the whole heap, which at 25 % local memory means fetching it all
collectgarbage("setpause", 1000)
local h, a, keys = {}, {}, {}
for i = 0, n - 1 do
  a[i + 1] = { i, i * 2, "s" .. i .. string.rep("x", i % 50) }
  if i % 8 == 0 then
    local k = "k" .. (i * 7919 % n)
    if not h[k] then keys[#keys + 1] = k end
    h[k] = "v" .. (i * 31)
  end
end
local l = 0
for _ = 1, 2 do
  for i = 0, n - 1 do
    local t = a[i + 1]
    local p = "s" .. i
    if t[2] ~= 2 * i or t[3]:sub(1, #p) ~= p then io.stderr:write("MISMATCH at " .. i .. "\n"); os.exit(1) end
    l = l + t[1] + #t[3]
  end
end
table.sort(keys)
local s = 0
for _, k in ipairs(keys) do s = (s * 31 + #k + #h[k]) % 1000000007 end
print(string.format("lua %d: %d %d %d", n, #keys, s, l))
