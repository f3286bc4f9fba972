//! `web-search`: inverted-index query serving — posting-list intersection and
//! top-k ranking (CloudSuite web search analog).
//!
//! ## What it models
//! The query path of an index-serving node (Nutch/Lucene in CloudSuite):
//! - **index**: for each term, a posting list of `{doc id, term frequency}`
//!   pairs (8 bytes) sorted by doc id, all lists in one mmapped postings file
//!   in term-id order; a lexicon array of `{offset, document frequency}`
//!   (16 bytes per term); per-document lengths (`u32`, Lucene's norms) for
//!   BM25 length normalisation.
//! - **queries** of 1–4 terms (uniform), each term drawn from a Zipfian
//!   (`query_theta`) over the terms ranked by frequency, skipping the 100 most
//!   frequent (stop words, which engines drop from queries).
//! - **evaluation**, conjunctive (all terms required, as Nutch queries are):
//!   look each term up in the lexicon; order the lists by length; walk the
//!   shortest list and, for each document, advance a cursor in every other list
//!   to the first posting `>=` it by galloping (exponential then binary)
//!   search; a document in every list is scored with BM25 (k1 = 1.2,
//!   b = 0.75) from its term frequencies and length and offered to a top-k
//!   min-heap (`top_k` entries of `{score, doc}`). A one-term query scores
//!   its whole list. The heap's entries are finally copied out, best first.
//!
//! Document frequencies follow a Zipf law (`theta`) scaled to `postings`
//! postings in total; each list's documents are a uniform random sample of
//! the collection (sorted), term frequencies are small and geometric.
//!
//! Instruction model: 200 per query (parsing, set-up, result output); 10 per
//! term plus its lexicon load; 4 per posting read on the lead list; 5 per
//! galloping probe; 30 per scored document (BM25 per term, doc-length load)
//! and 4 per heap level moved, plus the heap entries' loads and stores.
//!
//! Dependencies: every posting load of a list (the lead list's walk and the
//! galloping probes of the others) depends on that term's lexicon load (the
//! list's offset), and a scored document's length load on the lead-list
//! posting load that gave its doc id. Galloping's compares and the heap's
//! sifting only steer branches (control), so they add none.
//!
//! ## Choices
//! - Term ids are a fixed permutation of frequency ranks (dictionary order is
//!   unrelated to frequency), so popular lists are scattered over the file.
//! - The term-string dictionary (FST/hash lookup from query text to term id)
//!   and fetching stored documents for snippets are not modelled.
//! - Term frequencies are derived from (term, doc) by a hash, so the host
//!   keeps only doc ids (4 bytes per posting).
//! - Terms occur in documents independently, so conjunctions of rarer terms
//!   are often small or empty (real query terms co-occur more); the work of
//!   walking and galloping through the lists is done either way.

use rand::Rng;

use super::emit::Dep;
use super::kit::{advise_huge, mix64};
use super::zipf::{zeta, Zipf};
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::{Error, Result};
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "web-search",
    summary: "inverted index: Zipfian 1-4 term queries, galloping posting-list intersection, BM25 top-k heap",
    params: PARAMS,
    footprint: |p| Config::from(p).map(|c| c.estimate_bytes()),
    build: |p| Ok(Box::new(WebSearch::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "docs", default: "4M", doc: "documents in the index, up to 2^32-1" },
    ParamDoc { name: "terms", default: "1M", doc: "distinct terms (more than 100)" },
    ParamDoc { name: "postings", default: "24M", doc: "total postings (8 bytes each)" },
    ParamDoc { name: "queries", default: "10k", doc: "queries served" },
    ParamDoc { name: "theta", default: "0.99", doc: "Zipfian skew of term document frequencies, 0 to 0.9999" },
    ParamDoc { name: "query_theta", default: "0.9", doc: "Zipfian skew of query-term popularity, 0 to 0.9999" },
    ParamDoc { name: "top_k", default: "10", doc: "results per query, 1 to 1000" },
];

const STOPWORDS: u64 = 100;
const K1: f64 = 1.2;
const B: f64 = 0.75;

const INS_QUERY: u32 = 200;
const INS_TERM: u32 = 10;
const INS_POSTING: u32 = 4;
const INS_GALLOP: u32 = 5;
const INS_SCORE: u32 = 30;
const INS_HEAP: u32 = 4;

#[derive(Clone, Debug)]
struct Config {
    docs: u64,
    terms: u64,
    postings: u64,
    queries: u64,
    theta: f64,
    query_theta: f64,
    top_k: usize,
}

impl Config {
    fn from(p: &Params) -> Result<Config> {
        let c = Config {
            docs: p.count_in("docs", 1, u32::MAX as u64 - 1)?,
            terms: p.count_in("terms", STOPWORDS + 1, u32::MAX as u64 - 1)?,
            postings: p.count_in("postings", 1, 1 << 40)?,
            queries: p.count("queries")?,
            theta: p.real_in("theta", 0.0, 0.9999)?,
            query_theta: p.real_in("query_theta", 0.0, 0.9999)?,
            top_k: p.count_in("top_k", 1, 1000)? as usize,
        };
        if c.postings < c.terms {
            return Err(Error::config(p.key_path("postings"), "need at least one posting per term"));
        }
        Ok(c)
    }

    fn estimate_bytes(&self) -> u64 {
        self.postings * 8 + self.terms * 16 + self.docs * 4 + 32 * self.top_k as u64
    }
}

/// Term frequency of `doc` in `term`'s list: 1 + a geometric(1/2) draw.
#[inline(always)]
fn tf(term: u32, doc: u32) -> u32 {
    1 + (mix64((term as u64) << 32 | doc as u64).trailing_zeros()).min(14)
}

/// The index on the host and its simulated addresses.
pub struct Index {
    docs: u64,
    /// Per term id: first posting and document frequency.
    offset: Vec<u64>,
    df: Vec<u32>,
    postings: Vec<u32>,
    doc_len: Vec<u32>,
    avg_len: f64,
    /// Term id of frequency rank `r`: `(r·mult + add) mod terms`.
    mult: u64,
    add: u64,
    a_post: u64,
    a_lex: u64,
    a_len: u64,
}

impl Index {
    fn build(c: &Config, seed: u64, space: &mut AddressSpace) -> Index {
        let mut rng = component_rng(seed, "workload.web-search.index");
        let n = c.terms;
        let mut mult = ((n as f64 * 0.618_033_988_7) as u64) | 1;
        while gcd(mult, n) != 1 {
            mult += 2;
        }
        let add = rng.gen_range(0..n);
        let z = zeta(n, c.theta);
        let mut df_target = vec![0u64; n as usize];
        for r in 0..n {
            let tid = ((r as u128 * mult as u128 + add as u128) % n as u128) as usize;
            let want = (c.postings as f64 * ((r + 1) as f64).powf(-c.theta) / z).round() as u64;
            df_target[tid] = want.clamp(1, c.docs);
        }
        let mut offset = Vec::with_capacity(n as usize);
        let mut df = Vec::with_capacity(n as usize);
        let mut postings = Vec::with_capacity(c.postings as usize + n as usize);
        advise_huge(&postings);
        for &want in &df_target {
            let start = postings.len() as u64;
            let p = want as f64 / c.docs as f64;
            if p >= 1.0 {
                postings.extend(0..c.docs as u32);
            } else {
                // Bernoulli(p) sample of 0..docs, by geometric gaps.
                let ln_q = (1.0 - p).ln();
                let mut d = -1i64;
                loop {
                    let u: f64 = rng.gen();
                    d += 1 + ((1.0 - u).ln() / ln_q).floor() as i64;
                    if d >= c.docs as i64 {
                        break;
                    }
                    postings.push(d as u32);
                }
                if postings.len() as u64 == start {
                    postings.push(rng.gen_range(0..c.docs) as u32);
                }
            }
            offset.push(start);
            df.push((postings.len() as u64 - start) as u32);
        }
        let doc_len: Vec<u32> = (0..c.docs).map(|_| rng.gen_range(50..=1000)).collect();
        let avg_len = doc_len.iter().map(|&l| l as f64).sum::<f64>() / c.docs as f64;
        let a_post = space.mmap(postings.len() as u64 * 8);
        let a_lex = space.malloc(16 * n);
        let a_len = space.malloc(4 * c.docs);
        Index { docs: c.docs, offset, df, postings, doc_len, avg_len, mult, add, a_post, a_lex, a_len }
    }

    fn term_of_rank(&self, r: u64) -> u32 {
        let n = self.df.len() as u128;
        ((r as u128 * self.mult as u128 + self.add as u128) % n) as u32
    }

    fn list(&self, t: u32) -> &[u32] {
        let o = self.offset[t as usize] as usize;
        &self.postings[o..o + self.df[t as usize] as usize]
    }

    #[inline(always)]
    fn posting_addr(&self, t: u32, i: usize) -> u64 {
        self.a_post + 8 * (self.offset[t as usize] + i as u64)
    }

    fn idf(&self, t: u32) -> f64 {
        let df = self.df[t as usize] as f64;
        (1.0 + (self.docs as f64 - df + 0.5) / (df + 0.5)).ln()
    }

    /// BM25 of `doc` for `terms` (in the given order).
    fn score(&self, terms: &[u32], doc: u32) -> f64 {
        let norm = K1 * (1.0 - B + B * self.doc_len[doc as usize] as f64 / self.avg_len);
        let mut s = 0.0;
        for &t in terms {
            let f = tf(t, doc) as f64;
            s += self.idf(t) * f * (K1 + 1.0) / (f + norm);
        }
        s
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `a` ranks above `b`: higher score, then lower doc id.
#[inline(always)]
fn better(a: (f64, u32), b: (f64, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// The top-k min-heap (worst result at the root).
struct TopK {
    k: usize,
    items: Vec<(f64, u32)>,
    a_heap: u64,
    a_out: u64,
}

impl TopK {
    fn addr(&self, i: usize) -> u64 {
        self.a_heap + 16 * i as u64
    }

    fn offer(&mut self, s: (f64, u32), e: &mut Emitter) {
        if self.items.len() < self.k {
            let mut i = self.items.len();
            self.items.push(s);
            e.ins(INS_HEAP);
            e.store(self.addr(i), 16);
            while i > 0 {
                let p = (i - 1) / 2;
                e.ins(INS_HEAP);
                e.load(self.addr(p), 16);
                if !better(self.items[p], self.items[i]) {
                    break;
                }
                self.items.swap(p, i);
                e.store(self.addr(p), 16);
                e.store(self.addr(i), 16);
                i = p;
            }
            return;
        }
        e.ins(INS_HEAP);
        e.load(self.addr(0), 16);
        if !better(s, self.items[0]) {
            return;
        }
        self.items[0] = s;
        e.store(self.addr(0), 16);
        let n = self.items.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut w = i;
            for c in [l, r] {
                if c < n {
                    e.ins(INS_HEAP);
                    e.load(self.addr(c), 16);
                    if better(self.items[w], self.items[c]) {
                        w = c;
                    }
                }
            }
            if w == i {
                break;
            }
            self.items.swap(w, i);
            e.store(self.addr(w), 16);
            e.store(self.addr(i), 16);
            i = w;
        }
    }

    /// Results best first (copied out of the heap).
    fn finish(&mut self, out: &mut Vec<(f64, u32)>, e: &mut Emitter) {
        out.clear();
        out.extend_from_slice(&self.items);
        out.sort_by(|a, b| if better(*a, *b) { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater });
        for i in 0..out.len() {
            e.ins(INS_HEAP);
            e.load(self.addr(i), 16);
            e.store(self.a_out + 16 * i as u64, 16);
        }
        self.items.clear();
    }
}

/// Evaluates queries against an index.
pub struct Searcher {
    heap: TopK,
    cursors: Vec<usize>,
    terms: Vec<u32>,
    /// The query's distinct terms with their lexicon loads.
    lex: Vec<(u32, Dep)>,
}

impl Searcher {
    fn new(k: usize, space: &mut AddressSpace) -> Searcher {
        let a_heap = space.malloc(16 * k as u64);
        let a_out = space.malloc(16 * k as u64);
        Searcher { heap: TopK { k, items: Vec::with_capacity(k), a_heap, a_out }, cursors: Vec::new(), terms: Vec::new(), lex: Vec::new() }
    }

    /// Conjunctive top-k for `query` (term ids); results best first in `out`.
    fn search(&mut self, ix: &Index, query: &[u32], out: &mut Vec<(f64, u32)>, e: &mut Emitter) {
        e.ins(INS_QUERY);
        self.lex.clear();
        for &t in query {
            e.ins(INS_TERM);
            let dl = e.load_on(ix.a_lex + 16 * t as u64, 16, Dep::NONE);
            if !self.lex.iter().any(|x| x.0 == t) {
                self.lex.push((t, dl));
            }
        }
        self.lex.sort_by_key(|&(t, _)| (ix.df[t as usize], t));
        self.terms.clear();
        self.terms.extend(self.lex.iter().map(|x| x.0));
        let terms = std::mem::take(&mut self.terms);
        let lead = ix.list(terms[0]);
        let lead_dep = self.lex[0].1;
        self.cursors.clear();
        self.cursors.resize(terms.len(), 0);
        'docs: for (i, &d) in lead.iter().enumerate() {
            e.ins(INS_POSTING);
            let dd = e.load_on(ix.posting_addr(terms[0], i), 8, lead_dep);
            for ((&t, cursor), &(_, dl)) in terms.iter().zip(self.cursors.iter_mut()).zip(&self.lex).skip(1) {
                let list = ix.list(t);
                let c = gallop(ix, t, dl, list, *cursor, d, e);
                *cursor = c;
                if c == list.len() {
                    break 'docs;
                }
                if list[c] != d {
                    continue 'docs;
                }
            }
            e.ins(INS_SCORE);
            e.load_on(ix.a_len + 4 * d as u64, 4, dd);
            let s = ix.score(&terms, d);
            self.heap.offer((s, d), e);
        }
        self.terms = terms;
        self.heap.finish(out, e);
    }
}

/// First index `>= from` whose doc is `>= d`, by galloping search; `dl` is
/// the term's lexicon load (the list's offset).
#[inline]
fn gallop(ix: &Index, t: u32, dl: Dep, list: &[u32], from: usize, d: u32, e: &mut Emitter) -> usize {
    let probe = |i: usize, e: &mut Emitter| {
        e.ins(INS_GALLOP);
        e.load_on(ix.posting_addr(t, i), 8, dl);
        list[i]
    };
    if from >= list.len() || probe(from, e) >= d {
        return from;
    }
    // list[lo] < d; find hi with list[hi] >= d (or the end).
    let (mut lo, mut step) = (from, 1);
    let mut hi = loop {
        let h = lo + step;
        if h >= list.len() {
            break list.len();
        }
        if probe(h, e) >= d {
            break h;
        }
        lo = h;
        step *= 2;
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if probe(mid, e) >= d {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

pub struct WebSearch {
    cfg: Config,
    seed: u64,
    /// Results returned over all queries (set by `run`).
    pub results: u64,
}

impl WebSearch {
    pub fn new(p: &Params) -> Result<WebSearch> {
        Ok(WebSearch { cfg: Config::from(p)?, seed: p.seed(), results: 0 })
    }
}

/// The query stream: 1–4 terms, Zipfian over frequency ranks past the stop words.
struct QueryGen {
    rng: crate::rng::SimRng,
    zipf: Zipf,
}

impl QueryGen {
    fn new(c: &Config, seed: u64) -> Result<QueryGen> {
        Ok(QueryGen {
            rng: component_rng(seed, "workload.web-search.queries"),
            zipf: Zipf::new(c.terms - STOPWORDS, c.query_theta)?,
        })
    }

    fn next_query(&mut self, ix: &Index, q: &mut Vec<u32>) {
        q.clear();
        let n = self.rng.gen_range(1..=4);
        for _ in 0..n {
            q.push(ix.term_of_rank(STOPWORDS + self.zipf.next(&mut self.rng)));
        }
    }
}

impl Workload for WebSearch {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let ix = Index::build(&self.cfg, self.seed, &mut space);
        let mut searcher = Searcher::new(self.cfg.top_k, &mut space);
        let mut gen = QueryGen::new(&self.cfg, self.seed)?;
        let (mut q, mut out) = (Vec::with_capacity(4), Vec::with_capacity(self.cfg.top_k));
        let mut results = 0;
        for i in 0..self.cfg.queries {
            gen.next_query(&ix, &mut q);
            searcher.search(&ix, &q, &mut out, e);
            results += out.len() as u64;
            if i % 64 == 0 {
                e.progress(i, self.cfg.queries);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(self.cfg.queries, self.cfg.queries);
        self.results = results;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::{distinct_pages, emitted, params};
    use crate::workload::NullSink;

    fn cfg(kv: &[(&str, &str)]) -> Config {
        Config::from(&Params::resolve("web-search", PARAMS, &params(kv), 0).unwrap()).unwrap()
    }

    #[test]
    fn index_lists_are_sorted_and_sized_by_zipf() {
        let c = cfg(&[("docs", "100000"), ("terms", "5000"), ("postings", "400000")]);
        let ix = Index::build(&c, 1, &mut AddressSpace::new());
        for t in 0..5000 {
            assert!(ix.list(t).windows(2).all(|w| w[0] < w[1]));
        }
        let total = ix.postings.len() as f64;
        assert!((total / 400_000.0 - 1.0).abs() < 0.05, "{total} postings");
        let top = ix.df[ix.term_of_rank(0) as usize] as f64;
        let tenth = ix.df[ix.term_of_rank(9) as usize] as f64;
        assert!((top / tenth - 10f64.powf(0.99)).abs() < 1.0, "df(1)/df(10) = {}", top / tenth);
    }

    #[test]
    fn top_k_equals_brute_force_ranking() {
        let c = cfg(&[("docs", "20000"), ("terms", "2000"), ("postings", "300000"), ("top_k", "10")]);
        let mut space = AddressSpace::new();
        let ix = Index::build(&c, 2, &mut space);
        let mut s = Searcher::new(10, &mut space);
        let mut gen = QueryGen::new(&c, 2).unwrap();
        let mut null = NullSink;
        let mut e = Emitter::new(&mut null);
        let (mut q, mut out) = (Vec::new(), Vec::new());
        let mut nonempty = 0;
        for _ in 0..300 {
            gen.next_query(&ix, &mut q);
            s.search(&ix, &q, &mut out, &mut e);
            let mut terms = q.clone();
            terms.sort_unstable();
            terms.dedup();
            terms.sort_by_key(|&t| (ix.df[t as usize], t));
            let mut all: Vec<(f64, u32)> = (0..c.docs as u32)
                .filter(|d| terms.iter().all(|&t| ix.list(t).binary_search(d).is_ok()))
                .map(|d| (ix.score(&terms, d), d))
                .collect();
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            all.truncate(10);
            assert_eq!(out, all, "query {q:?}");
            nonempty += !out.is_empty() as u32;
        }
        assert!(nonempty > 100, "{nonempty} queries had results");
    }

    #[test]
    fn queries_read_postings_and_stay_within_the_index() {
        let kv = [("docs", "50000"), ("terms", "3000"), ("postings", "200000"), ("queries", "3000")];
        let recs = emitted("web-search", &kv, 4);
        let pages = distinct_pages(&recs) as f64;
        let est = cfg(&kv).estimate_bytes() as f64 / 4096.0;
        assert!(pages > 0.3 * est && pages < 1.05 * est, "pages {pages} vs estimate {est}");
    }
}
