# hashes.pl [N=150000]: Perl under comex: an array of N arrays walked and
# checked in order, and a hash of N/8 strings sorted; prints checksums,
# exits 1 on a mismatch.
use strict; use warnings;
my $n = shift // 150000;
my (%h, @a);
for my $i (0 .. $n - 1) {
    push @a, [$i, $i * 2, "s$i" . ("x" x ($i % 50))];
    $h{"k" . ($i * 7919 % $n)} = "v" . ($i * 31) if $i % 8 == 0;
}
my ($s, $l) = (0, 0);
for my $r (1 .. 2) {
    for my $i (0 .. $n - 1) {
        die "MISMATCH at $i\n" if $a[$i][1] != 2 * $i || substr($a[$i][2], 0, length("s$i")) ne "s$i";
        $l += $a[$i][0] + length($a[$i][2]);
    }
}
for my $k (sort keys %h) { $s = ($s * 31 + length($k) + length($h{$k})) % 1000000007; }
print "perl $n: ", scalar(keys %h), " $s $l\n";
