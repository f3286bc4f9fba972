//! `data-analytics`: naive-Bayes training as word counting into a large hash
//! map (CloudSuite data analytics analog).
//!
//! ## What it models
//! The core of Mahout's Bayesian classifier training (the CloudSuite
//! benchmark): stream labelled documents and count, for every (class, word)
//! pair, how often the word occurs in documents of the class, plus per-word
//! and per-class totals. Mahout keeps such counts in Colt-derived
//! open-addressing maps; this workload implements Colt's `OpenLongIntHashMap`:
//! - three parallel arrays — `long table[]` (keys), `int values[]`,
//!   `byte state[]` (FREE/FULL) — of a prime capacity;
//! - double hashing: `h = (int)(key ^ key>>>32) & 0x7fffffff`, first slot
//!   `h % capacity`, step `h % (capacity − 2)` (or 1), probing downwards with
//!   wrap-around;
//! - `adjustOrPutValue(key, 1, 1)` per word occurrence: an existing key's
//!   count is incremented, a new key is inserted;
//! - growth as Colt does it: when the number of keys would exceed
//!   `capacity × 0.5`, rehash into `nextPrime(4·size / (3·0.2 + 0.5))` slots,
//!   starting from Colt's default capacity 277 — so the table is rebuilt
//!   (every old entry read, re-probed and written) many times as it grows, and
//!   each new set of arrays is zeroed when allocated, as the JVM does.
//!
//! Keys are `class << 32 | word`. Word totals are a dense `double[vocab]`
//! (Mahout's per-feature weight vector), class totals a small array.
//! Documents: class uniform over `classes`; length uniform in
//! `[doc_words/2, 3·doc_words/2]`; each word drawn from a Zipfian over the
//! vocabulary (`theta`), class `c` shifting the popularity ranking by
//! `c·vocab/classes` so classes favour different words; word ids are a fixed
//! permutation of ranks (dictionary order is unrelated to frequency). Each
//! document's word ids are first written to a reused token buffer
//! (tokenising), then read back while counting.
//!
//! Instruction model: 20 per token to tokenise (plus its store); per counted
//! token 4 + the buffer load, 10 to form the key and hash it (two modulo
//! operations), 3 per probe (state load) plus 2 per key compared (table
//! load), 2 + a load and a store of the count (or 3 stores for a new key),
//! 3 + a load and a store of the word total; 6 per document for its class
//! total. A rehash costs 2 per old slot (state load) plus the entry's loads and
//! its insertion into the new arrays, and 2 per 64 bytes zeroed.
//!
//! Dependencies: a counted token's word id comes from its token-buffer load,
//! so every access of its map update (each probe's `state` and `table`
//! loads — the slots are computed from the key's hash, the compares only
//! decide how far to go — and the count's load and store or the new entry's
//! stores) and its word-total load and store depend on that load. In a rehash
//! the re-insertion's probes and stores depend on the old entry's key load.
//! Class totals (class from the RNG), tokenising and the zeroing have none.
//!
//! ## Choices
//! - Colt's `PrimeFinder` returns primes from a table; this uses the smallest
//!   prime at or above the requested capacity.
//! - No removals happen during training, so Colt's REMOVED state never occurs.
//! - The JVM heap is approximated by `malloc` (large arrays become mmaps; the
//!   arrays a rehash drops are unmapped, so their addresses are not reused —
//!   a copying collector would not reuse them at once either).
//! - Reading the documents themselves (the input files) is not modelled.

use rand::Rng;

use super::emit::Dep;
use super::kit::{huge_vec, next_prime, store_range};
use super::zipf::{zeta, Zipf};
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::{component_rng, SimRng};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "data-analytics",
    summary: "naive-Bayes training: Zipfian documents, (class, word) counts in a Colt open-addressing map",
    params: PARAMS,
    footprint: |p| Config::from(p).map(|c| c.estimate_bytes()),
    build: |p| Ok(Box::new(DataAnalytics::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "docs", default: "25k", doc: "documents trained on" },
    ParamDoc { name: "doc_words", default: "100", doc: "mean words per document" },
    ParamDoc { name: "vocab", default: "1M", doc: "vocabulary size (distinct words), up to 2^32-1" },
    ParamDoc { name: "classes", default: "20", doc: "document classes (labels)" },
    ParamDoc { name: "theta", default: "0.99", doc: "Zipfian skew of word frequencies, 0 to 0.9999" },
];

const FREE: u8 = 0;
const FULL: u8 = 1;
const DEFAULT_CAPACITY: u64 = 277;
const MIN_LOAD: f64 = 0.2;
const MAX_LOAD: f64 = 0.5;

const INS_TOKENISE: u32 = 20;
const INS_HASH: u32 = 10;

/// Colt's `chooseHighWaterMark`.
fn high_water(cap: u64) -> u64 {
    (cap - 2).min((cap as f64 * MAX_LOAD) as u64)
}

/// Colt's `chooseGrowCapacity(size, 0.2, 0.5)`.
fn grow_capacity(size: u64) -> u64 {
    next_prime((size + 1).max((4.0 * size as f64 / (3.0 * MIN_LOAD + MAX_LOAD)) as u64))
}

#[derive(Clone, Debug)]
struct Config {
    docs: u64,
    doc_words: u64,
    vocab: u64,
    classes: u64,
    theta: f64,
}

impl Config {
    fn from(p: &Params) -> Result<Config> {
        Ok(Config {
            docs: p.count("docs")?,
            doc_words: p.count_in("doc_words", 2, 1 << 20)?,
            vocab: p.count_in("vocab", 1, u32::MAX as u64 - 1)?,
            classes: p.count_in("classes", 1, 1 << 16)?,
            theta: p.real_in("theta", 0.0, 0.9999)?,
        })
    }

    /// Expected distinct (class, word) pairs: per class, `Σ_r 1 − e^{−T·p_r}`
    /// over the Zipf ranks with `T` tokens (exact head, integrated tail).
    fn expected_pairs(&self) -> f64 {
        let t = (self.docs * self.doc_words) as f64 / self.classes as f64;
        let z = zeta(self.vocab, self.theta);
        let f = |r: f64| 1.0 - (-t * r.powf(-self.theta) / z).exp();
        let head = self.vocab.min(4096);
        let mut d: f64 = (1..=head).map(|r| f(r as f64)).sum();
        if self.vocab > head {
            // Simpson's rule in log space over (head, vocab].
            let (a, b) = ((head as f64 + 0.5).ln(), (self.vocab as f64 + 0.5).ln());
            let steps = 256;
            let h = (b - a) / steps as f64;
            let g = |x: f64| f(x.exp()) * x.exp();
            let mut s = g(a) + g(b);
            for i in 1..steps {
                s += g(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
            }
            d += s * h / 3.0;
        }
        d * self.classes as f64
    }

    /// Arrays of every table the map grows through (none reused), the word
    /// totals, the class totals and the token buffer.
    fn estimate_bytes(&self) -> u64 {
        let pairs = self.expected_pairs() as u64;
        let mut cap = DEFAULT_CAPACITY;
        let mut bytes = 13 * cap;
        while pairs > high_water(cap) {
            cap = grow_capacity(high_water(cap) + 1);
            bytes += 13 * cap;
        }
        bytes + 8 * self.vocab + 8 * self.classes + 4 * (3 * self.doc_words / 2 + 1)
    }
}

/// Colt's `OpenLongIntHashMap` (FREE/FULL only).
pub struct OpenMap {
    cap: u64,
    table: Vec<u64>,
    values: Vec<i32>,
    state: Vec<u8>,
    distinct: u64,
    free_entries: u64,
    high_water: u64,
    a_table: u64,
    a_values: u64,
    a_state: u64,
}

impl OpenMap {
    pub fn new(space: &mut AddressSpace, e: &mut Emitter) -> OpenMap {
        let cap = next_prime(DEFAULT_CAPACITY);
        let mut m = OpenMap {
            cap,
            table: Vec::new(),
            values: Vec::new(),
            state: Vec::new(),
            distinct: 0,
            free_entries: cap,
            high_water: high_water(cap),
            a_table: 0,
            a_values: 0,
            a_state: 0,
        };
        m.allocate(cap, space, e);
        m
    }

    /// New zeroed arrays of `cap` slots (the old ones are dropped).
    fn allocate(&mut self, cap: u64, space: &mut AddressSpace, e: &mut Emitter) {
        self.cap = cap;
        self.table = huge_vec(cap as usize, 0);
        self.values = huge_vec(cap as usize, 0);
        self.state = huge_vec(cap as usize, FREE);
        self.a_table = space.malloc(8 * cap);
        self.a_values = space.malloc(4 * cap);
        self.a_state = space.malloc(cap);
        store_range(e, self.a_table, 8 * cap, 2);
        store_range(e, self.a_values, 4 * cap, 2);
        store_range(e, self.a_state, cap, 2);
        self.free_entries = cap;
        self.high_water = high_water(cap);
    }

    pub fn len(&self) -> u64 {
        self.distinct
    }

    pub fn is_empty(&self) -> bool {
        self.distinct == 0
    }

    /// Colt's `indexOfInsertion`: `Ok(slot)` holding `key`, or `Err(slot)` of
    /// the free slot where it would go. `on`: the load that gave `key`.
    #[inline]
    fn index_of_insertion(&self, key: u64, on: Dep, e: &mut Emitter) -> std::result::Result<u64, u64> {
        let h = ((key ^ (key >> 32)) as u32 & 0x7fff_ffff) as u64;
        let mut i = h % self.cap;
        let mut dec = h % (self.cap - 2);
        if dec == 0 {
            dec = 1;
        }
        e.ins(INS_HASH);
        loop {
            e.ins(3);
            e.load_on(self.a_state + i, 1, on);
            if self.state[i as usize] != FULL {
                return Err(i);
            }
            e.ins(2);
            e.load_on(self.a_table + 8 * i, 8, on);
            if self.table[i as usize] == key {
                return Ok(i);
            }
            i = if i >= dec { i - dec } else { i + self.cap - dec };
        }
    }

    /// Colt's `adjustOrPutValue(key, 1, 1)`. `on`: the load that gave `key`.
    pub fn increment(&mut self, key: u64, on: Dep, space: &mut AddressSpace, e: &mut Emitter) {
        let i = match self.index_of_insertion(key, on, e) {
            Ok(i) => {
                e.ins(2);
                e.load_on(self.a_values + 4 * i, 4, on);
                e.store_on(self.a_values + 4 * i, 4, on);
                self.values[i as usize] += 1;
                return;
            }
            Err(i) => i,
        };
        if self.distinct > self.high_water {
            self.rehash(grow_capacity(self.distinct + 1), space, e);
            return self.increment(key, on, space, e);
        }
        e.ins(3);
        e.store_on(self.a_table + 8 * i, 8, on);
        e.store_on(self.a_values + 4 * i, 4, on);
        e.store_on(self.a_state + i, 1, on);
        self.table[i as usize] = key;
        self.values[i as usize] = 1;
        if self.state[i as usize] == FREE {
            self.free_entries -= 1;
        }
        self.state[i as usize] = FULL;
        self.distinct += 1;
        if self.free_entries < 1 {
            self.rehash(grow_capacity(self.distinct + 1), space, e);
        }
    }

    fn rehash(&mut self, new_cap: u64, space: &mut AddressSpace, e: &mut Emitter) {
        let old_table = std::mem::take(&mut self.table);
        let old_values = std::mem::take(&mut self.values);
        let old_state = std::mem::take(&mut self.state);
        let (ot, ov, os) = (self.a_table, self.a_values, self.a_state);
        self.allocate(new_cap, space, e);
        for i in (0..old_state.len()).rev() {
            e.ins(2);
            e.load(os + i as u64, 1);
            if old_state[i] != FULL {
                continue;
            }
            e.ins(2);
            let dk = e.load_on(ot + 8 * i as u64, 8, Dep::NONE);
            e.load(ov + 4 * i as u64, 4);
            let key = old_table[i];
            let j = self.index_of_insertion(key, dk, e).expect_err("keys are distinct");
            e.ins(3);
            e.store_on(self.a_table + 8 * j, 8, dk);
            e.store_on(self.a_values + 4 * j, 4, dk);
            e.store_on(self.a_state + j, 1, dk);
            self.table[j as usize] = key;
            self.values[j as usize] = old_values[i];
            self.state[j as usize] = FULL;
        }
        self.free_entries -= self.distinct;
        space.free(ot);
        space.free(ov);
        space.free(os);
    }

    /// Every (key, count), in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (u64, i32)> + '_ {
        (0..self.cap as usize).filter(|&i| self.state[i] == FULL).map(|i| (self.table[i], self.values[i]))
    }
}

/// The document stream.
pub struct DocGen {
    rng: SimRng,
    zipf: Zipf,
    vocab: u64,
    classes: u64,
    shift: u64,
    mult: u64,
    add: u64,
    lo: u64,
    hi: u64,
}

impl DocGen {
    fn new(c: &Config, seed: u64) -> Result<DocGen> {
        let mut rng = component_rng(seed, "workload.data-analytics.docs");
        // An affine permutation of ranks to word ids: gcd(mult, vocab) = 1.
        let v = c.vocab;
        let mut mult = ((v as f64 * 0.618_033_988_7) as u64).max(1) | 1;
        while gcd(mult, v) != 1 {
            mult += 2;
        }
        let add = rng.gen_range(0..v);
        Ok(DocGen {
            zipf: Zipf::new(v, c.theta)?,
            rng,
            vocab: v,
            classes: c.classes,
            shift: v / c.classes,
            mult: mult % v.max(2),
            add,
            lo: c.doc_words / 2,
            hi: 3 * c.doc_words / 2,
        })
    }

    /// The next document: its class, its word ids in `words`.
    pub fn next_doc(&mut self, words: &mut Vec<u32>) -> u64 {
        let class = self.rng.gen_range(0..self.classes);
        let len = self.rng.gen_range(self.lo..=self.hi);
        words.clear();
        for _ in 0..len {
            let r = (self.zipf.next(&mut self.rng) + class * self.shift) % self.vocab;
            let w = ((r as u128 * self.mult as u128 + self.add as u128) % self.vocab as u128) as u32;
            words.push(w);
        }
        class
    }

    pub fn max_len(&self) -> u64 {
        self.hi
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The trained model: counts, word totals, class totals.
pub struct Model {
    pub counts: OpenMap,
    pub word_totals: Vec<f64>,
    pub class_totals: Vec<f64>,
}

pub struct DataAnalytics {
    cfg: Config,
    seed: u64,
    /// The trained model (set by `run`).
    pub model: Option<Model>,
}

impl DataAnalytics {
    pub fn new(p: &Params) -> Result<DataAnalytics> {
        Ok(DataAnalytics { cfg: Config::from(p)?, seed: p.seed(), model: None })
    }
}

impl Workload for DataAnalytics {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let mut gen = DocGen::new(&self.cfg, self.seed)?;
        let (v, c) = (self.cfg.vocab, self.cfg.classes);
        let a_words = space.malloc(8 * v);
        let a_classes = space.malloc(8 * c);
        let a_tokens = space.malloc(4 * (gen.max_len() + 1));
        let mut word_totals = huge_vec(v as usize, 0.0f64);
        let mut class_totals = vec![0.0f64; c as usize];
        let mut counts = OpenMap::new(&mut space, e);
        let mut tokens = Vec::with_capacity(gen.max_len() as usize + 1);
        for d in 0..self.cfg.docs {
            let class = gen.next_doc(&mut tokens);
            for t in 0..tokens.len() as u64 {
                e.ins(INS_TOKENISE);
                e.store(a_tokens + 4 * t, 4);
            }
            for (t, &w) in tokens.iter().enumerate() {
                e.ins(4);
                let dw = e.load_on(a_tokens + 4 * t as u64, 4, Dep::NONE);
                counts.increment(class << 32 | w as u64, dw, &mut space, e);
                e.ins(3);
                e.load_on(a_words + 8 * w as u64, 8, dw);
                e.store_on(a_words + 8 * w as u64, 8, dw);
                word_totals[w as usize] += 1.0;
            }
            e.ins(6);
            e.load(a_classes + 8 * class, 8);
            e.store(a_classes + 8 * class, 8);
            class_totals[class as usize] += tokens.len() as f64;
            if d % 256 == 0 {
                e.progress(d, self.cfg.docs);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(self.cfg.docs, self.cfg.docs);
        self.model = Some(Model { counts, word_totals, class_totals });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::{distinct_pages, emitted, params};
    use crate::workload::NullSink;
    use std::collections::HashMap;

    fn config(kv: &[(&str, &str)]) -> (Config, Params) {
        let p = Params::resolve("data-analytics", PARAMS, &params(kv), 6).unwrap();
        (Config::from(&p).unwrap(), p)
    }

    #[test]
    fn counts_equal_a_hashmap_over_the_same_documents() {
        let kv = [("docs", "2000"), ("vocab", "20000"), ("classes", "5"), ("doc_words", "50")];
        let (cfg, p) = config(&kv);
        let mut w = DataAnalytics::new(&p).unwrap();
        let mut null = NullSink;
        w.run(&mut Emitter::new(&mut null)).unwrap();
        let model = w.model.unwrap();
        let mut gen = DocGen::new(&cfg, 6).unwrap();
        let mut want: HashMap<u64, i32> = HashMap::new();
        let mut words = vec![0.0; 20_000];
        let mut classes = vec![0.0; 5];
        let mut doc = Vec::new();
        for _ in 0..2000 {
            let c = gen.next_doc(&mut doc);
            for &wd in &doc {
                *want.entry(c << 32 | wd as u64).or_default() += 1;
                words[wd as usize] += 1.0;
            }
            classes[c as usize] += doc.len() as f64;
        }
        let got: HashMap<u64, i32> = model.counts.entries().collect();
        assert_eq!(got.len() as u64, model.counts.len());
        assert_eq!(got, want);
        assert_eq!(model.word_totals, words);
        assert_eq!(model.class_totals, classes);
        // The map grew from Colt's 277 slots and kept its load at or under 1/2.
        assert!(model.counts.cap > 4 * 277);
        assert!(model.counts.len() as f64 <= 0.5 * model.counts.cap as f64 + 1.0);
        // Zipfian words: the pair count is far below the token count.
        let tokens: f64 = classes.iter().sum();
        assert!((want.len() as f64) < 0.5 * tokens);
    }

    #[test]
    fn expected_pairs_and_footprint_track_the_run() {
        let kv = [("docs", "5000"), ("vocab", "200000"), ("classes", "10"), ("doc_words", "80")];
        let (cfg, p) = config(&kv);
        let mut w = DataAnalytics::new(&p).unwrap();
        let mut null = NullSink;
        w.run(&mut Emitter::new(&mut null)).unwrap();
        let pairs = w.model.unwrap().counts.len() as f64;
        let est = cfg.expected_pairs();
        assert!((est / pairs - 1.0).abs() < 0.05, "expected {est} pairs, got {pairs}");
        let recs = emitted("data-analytics", &kv, 6);
        let pages = distinct_pages(&recs) as f64;
        let est_pages = cfg.estimate_bytes() as f64 / 4096.0;
        assert!(pages > 0.7 * est_pages && pages < 1.1 * est_pages, "pages {pages} vs {est_pages}");
    }
}
