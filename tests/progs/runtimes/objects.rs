// objects.rs [N=1500000]: a Rust program under comex: N boxed records with
// owned strings in a Vec, a BTreeMap over every 8th, walked twice and
// checked; prints checksums, exits 1 on a mismatch.
use std::collections::BTreeMap;

struct Rec {
    id: u64,
    twice: u64,
    name: String,
    words: Vec<u32>,
}

fn main() {
    let n: u64 = std::env::args().nth(1).map_or(1_500_000, |a| a.parse().expect("N must be a number"));
    let mut recs: Vec<Box<Rec>> = Vec::with_capacity(n as usize);
    let mut map = BTreeMap::new();
    for i in 0..n {
        let name = format!("r{}{}", i, "x".repeat((i % 40) as usize));
        recs.push(Box::new(Rec { id: i, twice: 2 * i, name, words: (0..(i % 24) as u32).collect() }));
        if i % 8 == 0 {
            map.insert(format!("k{}", i.wrapping_mul(7919) % n), i.wrapping_mul(31));
        }
    }
    let (mut len, mut sum) = (0u64, 0u64);
    for _ in 0..2 {
        for (i, r) in recs.iter().enumerate() {
            let i = i as u64;
            if r.id != i || r.twice != 2 * i || !r.name.starts_with(&format!("r{}", i)) || r.words.len() as u64 != i % 24 {
                println!("MISMATCH at {}", i);
                std::process::exit(1);
            }
            len += r.name.len() as u64 + r.words.iter().map(|&w| w as u64).sum::<u64>();
        }
    }
    for (k, v) in &map {
        sum = (sum * 31 + k.len() as u64 + v) % 1_000_000_007;
    }
    println!("rust {}: {} {} {}", n, map.len(), sum, len);
}
