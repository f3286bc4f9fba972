//! Reference model of Iceberg placement: the same rules written the obvious
//! way, over a flag per pool frame and a `VecDeque` free list per yard, with
//! every candidate collected into vectors and searched linearly. Slow and
//! obviously correct; test-only. The hash functions are shared (they are not
//! what is being checked).
//! ## Stats
//! None.

use std::collections::VecDeque;

use super::super::{PageAges, Placement};
use super::hash::{IcebergHasher, BUCKET_FRAMES};
use crate::addr::{Asid, Pfn};

pub struct RefIceberg {
    h: IcebergHasher,
    tie_later: bool,
    include_ghosts: bool,
    /// Per pool frame: in use.
    used: Vec<bool>,
    /// Per bucket: the free slots of the front yard and of the backyard, head first.
    fifo: Vec<[VecDeque<u64>; 2]>,
}

impl RefIceberg {
    pub fn new(h: IcebergHasher, tie_later: bool, include_ghosts: bool) -> Self {
        let f = h.front() as u64;
        let fifo = (0..h.buckets()).map(|_| [(0..f).collect(), (f..BUCKET_FRAMES).collect()]).collect();
        RefIceberg { used: vec![false; (h.buckets() * BUCKET_FRAMES) as usize], fifo, h, tie_later, include_ghosts }
    }

    fn frames(&self, bucket: u64, back: bool) -> Vec<u64> {
        let base = self.h.bucket_base(bucket);
        let f = self.h.front() as u64;
        let r = if back { f..BUCKET_FRAMES } else { 0..f };
        r.map(|s| base + s).collect()
    }

    fn is_used(&self, pfn: u64) -> bool {
        self.used[(pfn - self.h.begin()) as usize]
    }

    fn set(&mut self, pfn: u64, v: bool) {
        let i = (pfn - self.h.begin()) as usize;
        self.used[i] = v;
    }

    /// The smallest (last use, frame) among used, tracked frames (ghosts only if asked).
    fn oldest(&self, frames: &[u64], a: &dyn PageAges, ghosts_only: bool) -> Option<u64> {
        frames
            .iter()
            .filter(|&&p| self.is_used(p) && (!ghosts_only || a.is_ghost(p)))
            .filter_map(|&p| a.last_use(p).map(|t| (t, p)))
            .min()
            .map(|(_, p)| p)
    }

    fn ghosts(&self, frames: &[u64], a: &dyn PageAges) -> u32 {
        frames.iter().filter(|&&p| self.is_used(p) && a.is_ghost(p)).count() as u32
    }

    /// Index of the best value under the tie rule (smallest; ties to the later or earlier).
    fn pick(&self, values: &[Option<u32>]) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v else { continue };
            match best {
                None => best = Some(i),
                Some(b) => {
                    let bv = values[b].unwrap();
                    if *v < bv || (self.tie_later && *v == bv) {
                        best = Some(i);
                    }
                }
            }
        }
        best
    }

    pub fn place(&mut self, asid: Asid, vpn: u64, ages: Option<&dyn PageAges>) -> Placement {
        let fb = self.h.front_bucket(asid, vpn);
        if let Some(s) = self.fifo[fb as usize][0].pop_front() {
            let pfn = self.h.bucket_base(fb) + s;
            self.set(pfn, true);
            return Placement::Frame(Pfn(pfn));
        }
        let front = self.frames(fb, false);
        if let Some(a) = ages {
            if let Some(p) = self.oldest(&front, a, true) {
                return Placement::Displace(Pfn(p));
            }
        }
        let cands: Vec<u64> = (0..self.h.choices()).map(|j| self.h.back_bucket(asid, vpn, j)).collect();
        let backs: Vec<Vec<u64>> = cands.iter().map(|&c| self.frames(c, true)).collect();
        let b = self.h.back();
        let occ: Vec<Option<u32>> = backs
            .iter()
            .map(|fr| {
                let used = fr.iter().filter(|&&p| self.is_used(p)).count() as u32;
                let ghosts = match (ages, self.include_ghosts) {
                    (Some(a), false) => self.ghosts(fr, a),
                    _ => 0,
                };
                Some(used - ghosts)
            })
            .collect();
        let best = self.pick(&occ).unwrap();
        if occ[best].unwrap() < b {
            let c = cands[best];
            if let Some(s) = self.fifo[c as usize][1].pop_front() {
                let pfn = self.h.bucket_base(c) + s;
                self.set(pfn, true);
                return Placement::Frame(Pfn(pfn));
            }
            return Placement::Displace(Pfn(self.oldest(&backs[best], ages.unwrap(), true).unwrap()));
        }
        let Some(a) = ages else { return Placement::Full };
        if self.include_ghosts {
            let live: Vec<Option<u32>> = backs
                .iter()
                .map(|fr| {
                    let g = self.ghosts(fr, a);
                    (g > 0).then_some(b - g)
                })
                .collect();
            if let Some(i) = self.pick(&live) {
                return Placement::Displace(Pfn(self.oldest(&backs[i], a, true).unwrap()));
            }
        }
        let all: Vec<u64> = front.iter().chain(backs.iter().flatten()).copied().collect();
        match self.oldest(&all, a, false) {
            Some(p) => Placement::Displace(Pfn(p)),
            None => Placement::Full,
        }
    }

    /// Return a pool frame to the tail of its yard's list.
    pub fn free(&mut self, pfn: u64) {
        assert!(self.is_used(pfn), "reference: freeing a free frame {pfn}");
        self.set(pfn, false);
        let i = pfn - self.h.begin();
        let (bucket, slot) = (i / BUCKET_FRAMES, i % BUCKET_FRAMES);
        let yard = (slot >= self.h.front() as u64) as usize;
        self.fifo[bucket as usize][yard].push_back(slot);
    }

    /// Take one specific free pool frame; false if it is not free.
    pub fn take(&mut self, pfn: u64) -> bool {
        if self.is_used(pfn) {
            return false;
        }
        let i = pfn - self.h.begin();
        let (bucket, slot) = (i / BUCKET_FRAMES, i % BUCKET_FRAMES);
        let yard = (slot >= self.h.front() as u64) as usize;
        self.fifo[bucket as usize][yard].retain(|&s| s != slot);
        self.set(pfn, true);
        true
    }

    pub fn free_frames(&self) -> u64 {
        self.used.iter().filter(|&&u| !u).count() as u64
    }
}
