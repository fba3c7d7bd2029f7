# hashes.rb [N=150000]: Ruby under comex: an array of N arrays walked and
# checked in order, and a hash of N/8 strings sorted; prints checksums,
# exits 1 on a mismatch.
n = (ARGV[0] || 150000).to_i
h = {}
a = []
n.times do |i|
  a << [i, i * 2, "s#{i}" + "x" * (i % 50)]
  h["k#{i * 7919 % n}"] = "v#{i * 31}" if i % 8 == 0
end
l = 0
2.times do
  n.times do |i|
    x = a[i]
    (warn "MISMATCH at #{i}"; exit 1) if x[1] != 2 * i || !x[2].start_with?("s#{i}")
    l += x[0] + x[2].length
  end
end
s = 0
h.keys.sort.each { |k| s = (s * 31 + k.length + h[k].length) % 1000000007 }
puts "ruby #{n}: #{h.size} #{s} #{l}"
