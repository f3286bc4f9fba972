//! Intrusive doubly linked lists over page numbers, in flat per-frame arrays.
//!
//! `K` lists share one pair of link arrays; a page is on at most one list at a
//! time. The head is the most recently inserted end (Linux's `list_add`), the
//! tail the end reclaim takes from. Every operation is O(1) and allocation-free.

/// End-of-list / not-linked marker.
pub(super) const NIL: u32 = u32::MAX;
/// `owner` of a page on no list.
const NONE: u8 = u8::MAX;

#[derive(Clone, Debug)]
pub(super) struct PageLists<const K: usize> {
    /// Towards the head.
    prev: Vec<u32>,
    /// Towards the tail.
    next: Vec<u32>,
    /// The list a page is on, or `NONE`.
    owner: Vec<u8>,
    head: [u32; K],
    tail: [u32; K],
    len: [u64; K],
}

impl<const K: usize> PageLists<K> {
    /// Empty lists over pages `0 .. frames` (`frames < u32::MAX`, checked by the caller).
    pub(super) fn new(frames: usize) -> Self {
        debug_assert!(K < NONE as usize);
        debug_assert!(frames < NIL as usize);
        PageLists { prev: vec![NIL; frames], next: vec![NIL; frames], owner: vec![NONE; frames], head: [NIL; K], tail: [NIL; K], len: [0; K] }
    }

    /// The list `page` is on.
    #[inline(always)]
    pub(super) fn list_of(&self, page: u32) -> Option<usize> {
        match self.owner.get(page as usize) {
            Some(&o) if o != NONE => Some(o as usize),
            _ => None,
        }
    }

    #[inline(always)]
    pub(super) fn head(&self, l: usize) -> Option<u32> {
        (self.head[l] != NIL).then_some(self.head[l])
    }

    #[inline(always)]
    pub(super) fn tail(&self, l: usize) -> Option<u32> {
        (self.tail[l] != NIL).then_some(self.tail[l])
    }

    /// The page after `page` towards the tail of its list.
    #[inline(always)]
    pub(super) fn next(&self, page: u32) -> Option<u32> {
        let n = self.next[page as usize];
        (n != NIL).then_some(n)
    }

    #[inline(always)]
    pub(super) fn len(&self, l: usize) -> u64 {
        self.len[l]
    }

    /// Total pages on all lists.
    pub(super) fn total(&self) -> u64 {
        self.len.iter().sum()
    }

    /// Put `page` (on no list) at the head of list `l`.
    #[inline(always)]
    pub(super) fn push_head(&mut self, l: usize, page: u32) {
        let i = page as usize;
        debug_assert_eq!(self.owner[i], NONE, "page {page} is already on a list");
        let h = self.head[l];
        self.prev[i] = NIL;
        self.next[i] = h;
        if h != NIL {
            self.prev[h as usize] = page;
        } else {
            self.tail[l] = page;
        }
        self.head[l] = page;
        self.owner[i] = l as u8;
        self.len[l] += 1;
    }

    /// Put `page` (on no list) just before `at` (towards the head) on `at`'s list.
    #[inline]
    pub(super) fn insert_before(&mut self, at: u32, page: u32) {
        let i = page as usize;
        debug_assert_eq!(self.owner[i], NONE, "page {page} is already on a list");
        let l = self.owner[at as usize];
        debug_assert_ne!(l, NONE, "anchor {at} is on no list");
        let p = self.prev[at as usize];
        self.prev[i] = p;
        self.next[i] = at;
        self.prev[at as usize] = page;
        if p != NIL {
            self.next[p as usize] = page;
        } else {
            self.head[l as usize] = page;
        }
        self.owner[i] = l;
        self.len[l as usize] += 1;
    }

    /// Take `page` off its list; returns the list it was on.
    #[inline(always)]
    pub(super) fn remove(&mut self, page: u32) -> Option<usize> {
        let l = self.list_of(page)?;
        let i = page as usize;
        let (p, n) = (self.prev[i], self.next[i]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.head[l] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.tail[l] = p;
        }
        self.prev[i] = NIL;
        self.next[i] = NIL;
        self.owner[i] = NONE;
        self.len[l] -= 1;
        Some(l)
    }

    /// Move `page` (on any list) to the head of list `l`.
    #[inline(always)]
    pub(super) fn move_to_head(&mut self, l: usize, page: u32) {
        if self.head[l] == page {
            return;
        }
        self.remove(page);
        self.push_head(l, page);
    }

    /// List `l` from head to tail (tests and debugging; allocates).
    pub(super) fn iter(&self, l: usize) -> Vec<u64> {
        let mut v = Vec::new();
        let mut p = self.head[l];
        while p != NIL {
            v.push(p as u64);
            p = self.next[p as usize];
        }
        v
    }

    /// Links, owners and lengths agree (tests).
    #[cfg(test)]
    pub(super) fn check(&self) -> Result<(), String> {
        let mut seen = 0u64;
        for l in 0..K {
            let pages = self.iter(l);
            if pages.len() as u64 != self.len[l] {
                return Err(format!("list {l}: length {} but {} linked", self.len[l], pages.len()));
            }
            let mut prev = NIL;
            for &p in &pages {
                if self.owner[p as usize] != l as u8 || self.prev[p as usize] != prev {
                    return Err(format!("list {l}: page {p} has owner {} and prev {}", self.owner[p as usize], self.prev[p as usize]));
                }
                prev = p as u32;
            }
            if self.tail[l] != prev {
                return Err(format!("list {l}: tail {} but last page {prev}", self.tail[l]));
            }
            seen += pages.len() as u64;
        }
        let owned = self.owner.iter().filter(|&&o| o != NONE).count() as u64;
        if owned != seen {
            return Err(format!("{owned} pages have an owner but {seen} are linked"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_insert_remove_move_keep_the_links() {
        let mut l = PageLists::<2>::new(10);
        l.push_head(0, 3);
        l.push_head(0, 5);
        l.insert_before(3, 7);
        assert_eq!(l.iter(0), vec![5, 7, 3]);
        l.insert_before(5, 1);
        assert_eq!(l.iter(0), vec![1, 5, 7, 3]);
        assert_eq!(l.remove(7), Some(0));
        assert_eq!(l.remove(7), None);
        l.move_to_head(1, 3);
        l.move_to_head(0, 5);
        assert_eq!(l.iter(0), vec![5, 1]);
        assert_eq!(l.iter(1), vec![3]);
        assert_eq!((l.len(0), l.len(1), l.total()), (2, 1, 3));
        assert_eq!((l.head(0), l.tail(0), l.next(5), l.next(1)), (Some(5), Some(1), Some(1), None));
        assert_eq!(l.list_of(3), Some(1));
        assert_eq!(l.list_of(9), None);
        assert_eq!(l.list_of(100), None);
        l.check().unwrap();
    }
}
