//! The read scans' optimizations against plain alternatives, in one binary: copies of
//! `src/read/lines.rs`'s wide masks and of the bit-parallel line counter (`src/read/count.rs`,
//! removed in the commit that recorded benches/README.md's "Read scans" section), on generated
//! 100 MB payloads (a log, JSON Lines, one-line JSON and short lines), alternating the sides.
//!
//! ```text
//! cargo run --release --manifest-path benches/scans-micro/Cargo.toml              # dense counts
//! cargo run --release --manifest-path benches/scans-micro/Cargo.toml primitives   # line scans
//! ```
use std::hint::black_box;
use std::time::Instant;
use wide::u8x64;

const BLOCK: usize = 64;

#[inline]
fn break_len(data: &[u8], i: usize) -> usize {
    match data[i] {
        b'\n' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => 1,
        b'\r' => 1 + usize::from(data.get(i + 1) == Some(&b'\n')),
        0xc2 if data.get(i + 1) == Some(&0x85) => 2,
        0xe2 if data.get(i + 1) == Some(&0x80) && matches!(data.get(i + 2), Some(0xa8 | 0xa9)) => 3,
        _ => 0,
    }
}
#[inline(always)]
fn rare_starts(block: &[u8; BLOCK]) -> u64 {
    let bytes = u8x64::from(*block);
    let within_three = |low| {
        let above = bytes - u8x64::splat(low);
        above.min(u8x64::splat(2)).simd_eq(above)
    };
    let leads = bytes.simd_eq(u8x64::splat(0xc2)) | bytes.simd_eq(u8x64::splat(0xe2));
    (within_three(0x0b) | within_three(0x1c) | leads).to_bitmask()
}
#[inline(always)]
fn break_candidates(block: &[u8; BLOCK]) -> u64 {
    let bytes = u8x64::from(*block);
    let controls = bytes.min(u8x64::splat(0x1e)).simd_eq(bytes);
    let leads = bytes.simd_eq(u8x64::splat(0xc2)) | bytes.simd_eq(u8x64::splat(0xe2));
    (controls | leads).to_bitmask()
}
#[inline(always)]
fn block_at(data: &[u8], at: usize) -> [u8; BLOCK] {
    let rest = data.get(at..).unwrap_or_default();
    rest.first_chunk().copied().unwrap_or_else(|| {
        let mut block = [0; BLOCK];
        block[..rest.len()].copy_from_slice(rest);
        block
    })
}
#[inline(always)]
fn within(data: &[u8], at: usize) -> u64 {
    u64::MAX >> (BLOCK - BLOCK.min(data.len() - at))
}
#[inline(always)]
fn bits(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let i = (mask != 0).then(|| mask.trailing_zeros() as usize)?;
        mask &= mask - 1;
        Some(i)
    })
}
fn w_rare_breaks(data: &[u8], from: usize, to: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let head = &data[..to];
    (from..to).step_by(BLOCK).flat_map(move |at| {
        let starts = rare_starts(&block_at(head, at)) & within(head, at);
        let found = bits(starts).map(move |i| (at + i, break_len(data, at + i)));
        found.filter(|&(_, len)| len > 0)
    })
}
fn w_next_break(data: &[u8], from: usize) -> Option<(usize, usize)> {
    (from..data.len()).step_by(BLOCK).find_map(|at| {
        let candidates = break_candidates(&block_at(data, at)) & within(data, at);
        let mut found = bits(candidates).map(|i| (at + i, break_len(data, at + i)));
        found.find(|&(_, len)| len > 0)
    })
}
fn w_line_start(data: &[u8], at: usize) -> usize {
    let head = &data[..at];
    let last_in_block = |from: usize| {
        let candidates = break_candidates(&block_at(data, from)) & within(head, from);
        let breaks = bits(candidates).map(|i| (from + i, break_len(data, from + i)));
        breaks.filter(|&(start, len)| len > 0 && start + len <= at).last()
    };
    let last = (0..at).step_by(BLOCK).rev().find_map(last_in_block);
    last.map_or(0, |(start, len)| start + len)
}

// The plain alternatives: memchr for `\n`, a byte test for the other breaks.
#[inline]
fn rare(b: u8) -> bool { matches!(b, 0x0b..=0x0d | 0x1c..=0x1e | 0xc2 | 0xe2) }
fn s_rare_breaks(data: &[u8], from: usize, to: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    let head = &data[..to];
    (from..to).filter(move |&i| rare(head[i])).map(move |i| (i, break_len(data, i))).filter(|&(_, len)| len > 0)
}
fn p_next_break<'a, I: Iterator<Item = (usize, usize)>>(data: &'a [u8], from: usize, rb: impl Fn(&'a [u8], usize, usize) -> I) -> Option<(usize, usize)> {
    let nl = memchr::memchr(b'\n', &data[from..]).map_or(data.len(), |i| from + i);
    rb(data, from, nl).next().or((nl < data.len()).then_some((nl, 1)))
}
fn p_line_start<'a, I: Iterator<Item = (usize, usize)>>(data: &'a [u8], at: usize, rb: impl Fn(&'a [u8], usize, usize) -> I) -> usize {
    let nl = memchr::memrchr(b'\n', &data[..at]).map_or(0, |i| i + 1);
    rb(data, nl, at).filter(|&(s, l)| s + l <= at).last().map_or(nl, |(s, l)| s + l)
}

fn make(kind: &str, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 1000);
    let mut i = 0u64;
    if kind == "json" { out.extend_from_slice(b"{\"items\":["); }
    while out.len() < size {
        match kind {
            "log" => {
                let level = if i % 1000 == 7 { "ERROR" } else { "INFO" };
                out.extend_from_slice(format!("{i:09} {level} request served in {} ms by shard {}\n", i % 97, i % 13).as_bytes());
            }
            _ => {
                let note = if i % 10 == 3 { "retried \u{2014} upstream timeout" } else { "ok" };
                let rec = format!("{{\"id\":{i},\"user\":{{\"name\":\"user{}\",\"email\":\"u{}@example.com\"}},\"status\":\"{}\",\"latency_ms\":{},\"note\":\"{note}\"}}", i % 5000, i % 5000, if i % 100 == 0 { "failed" } else { "ok" }, i % 300);
                out.extend_from_slice(rec.as_bytes());
                out.extend_from_slice(if kind == "jsonl" { b"\n" } else { b"," });
            }
        }
        i += 1;
    }
    if kind == "json" { out.pop(); out.extend_from_slice(b"]}"); }
    out
}

/// The line scans' primitives: wide masks against `memchr` for `\n` and a byte test for the rest.
fn primitives() {
    const CH: usize = 4 << 20;
    for kind in ["log", "jsonl", "json"] {
        let d = make(kind, 100_000_000);
        let d = &d[..];
        bench(&format!("{kind}: rare breaks of 100 MB (index build)"), vec![
            ("wide masks", Box::new(|| w_rare_breaks(d, 0, d.len()).count() as u64)),
            ("plain byte test", Box::new(|| s_rare_breaks(d, 0, d.len()).count() as u64)),
            ("(for scale) memchr_iter \\n", Box::new(|| memchr::memchr_iter(b'\n', d).count() as u64)),
        ]);
        bench(&format!("{kind}: cut 4 MiB chunks at their last line end"), vec![
            ("wide masks", Box::new(|| d.chunks(CH).map(|c| w_line_start(c, c.len()) as u64).sum())),
            ("memrchr \\n + plain byte test", Box::new(|| d.chunks(CH).map(|c| p_line_start(c, c.len(), s_rare_breaks) as u64).sum())),
        ]);
        bench(&format!("{kind}: next break from each chunk's start"), vec![
            ("wide masks", Box::new(|| d.chunks(CH).map(|c| w_next_break(c, 0).map_or(0, |b| b.0) as u64).sum())),
            ("memchr \\n + plain byte test", Box::new(|| d.chunks(CH).map(|c| p_next_break(c, 0, s_rare_breaks).map_or(0, |b| b.0) as u64).sum())),
        ]);
    }
}

#[inline(always)]
fn eq_mask(block: &[u8; BLOCK], byte: u8) -> u64 {
    u8x64::from(*block).simd_eq(u8x64::splat(byte)).to_bitmask()
}
#[inline(always)]
fn only(mask: u64, keep: impl Fn(usize) -> bool) -> u64 {
    bits(mask).filter(|&i| keep(i)).fold(0, |kept, i| kept | 1 << i)
}
fn lc_count(pattern: &[u8], data: &[u8]) -> u64 {
    let (first, last, reach) = (pattern[0], pattern[pattern.len() - 1], pattern.len() - 1);
    let (mut count, mut carry) = (0, false);
    for at in (0..data.len()).step_by(BLOCK) {
        let (block, within) = (block_at(data, at), within(data, at));
        let newlines = eq_mask(&block, b'\n');
        let others = break_candidates(&block) & !newlines & within;
        let breaks = newlines & within | only(others, |i| break_len(data, at + i) > 0);
        let candidates = eq_mask(&block, first) & eq_mask(&block_at(data, at + reach), last);
        let starts = only(candidates & within & !breaks, |i| data[at + i..].starts_with(pattern));
        let (sum, over) = (!breaks).overflowing_add(starts);
        let (sum, over_too) = sum.overflowing_add(u64::from(carry));
        count += u64::from((sum & breaks).count_ones());
        carry = over | over_too;
    }
    count + u64::from(carry)
}
fn match_by_match(finder: &memchr::memmem::Finder, data: &[u8], nb: impl Fn(&[u8], usize) -> Option<(usize, usize)>) -> u64 {
    let (mut pos, mut n) = (0, 0);
    while pos < data.len() {
        let Some(i) = finder.find(&data[pos..]) else { break };
        let (end, len) = nb(data, pos + i).unwrap_or((data.len(), 0));
        n += 1;
        pos = end + len;
    }
    n
}

fn bench(name: &str, vs: Vec<(&str, Box<dyn Fn() -> u64 + '_>)>) {
    let mut ts = vec![vec![]; vs.len()];
    let mut rs = vec![0; vs.len()];
    for _ in 0..5 { for (k, (_, f)) in vs.iter().enumerate() { let t = Instant::now(); rs[k] = black_box(f()); ts[k].push(t.elapsed().as_secs_f64() * 1e3); } }
    println!("{name}");
    for (k, (n, _)) in vs.iter().enumerate() { ts[k].sort_by(|a, b| a.partial_cmp(b).unwrap()); println!("  {n:45} median {:8.2} ms  min {:8.2}  r={}", ts[k][2], ts[k][0], rs[k]); }
}
fn lines_of(size: usize, line: impl Fn(u64) -> String) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 200); let mut i = 0;
    while out.len() < size { out.extend_from_slice(line(i).as_bytes()); i += 1; }
    out
}
fn spans(d: &[u8]) -> Vec<&[u8]> {
    // 64 KiB spans cut after a newline, as scan_lines cuts them
    let mut v = vec![]; let mut p = 0;
    while p < d.len() { let e = (p + (64 << 10)).min(d.len()); let e = if e == d.len() { e } else { memchr::memchr(b'\n', &d[e..]).map_or(d.len(), |i| e + i + 1) }; v.push(&d[p..e]); p = e; }
    v
}
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    if which == "primitives" { return primitives(); }
    let log = make("log", 100_000_000);
    let listing = lines_of(100_000_000, |i| format!("src/module{}/sub{}/file_{i}.rs\n", i % 37, i % 11));
    let csv = lines_of(100_000_000, |i| format!("{i},{},{}.{:02}\n", i % 1000, i % 97, i % 100));
    let x: Vec<u8> = (0..50_000_000u64).flat_map(|i| if i % 1000 == 999 { &b"xy\n"[..] } else { &b"x\n"[..] }).copied().collect();
    for (name, d, pat) in [("log (~50 B lines) INFO, 999 in 1000", &log, &b"INFO"[..]), ("listing (~35 B lines) src/, every line", &listing, &b"src/"[..]), ("csv (~20 B lines) ',', every line", &csv, &b","[..]), ("x lines x, 999 in 1000", &x, &b"x"[..])] {
        let f = memchr::memmem::Finder::new(pat);
        let sp = spans(d);
        bench(name, vec![
            ("LineCounter per 64 KiB span", Box::new(|| sp.iter().map(|c| lc_count(pat, c)).sum())),
            ("match by match (memmem + wide next_break)", Box::new(|| sp.iter().map(|c| match_by_match(&f, c, w_next_break)).sum())),
        ]);
    }
}
