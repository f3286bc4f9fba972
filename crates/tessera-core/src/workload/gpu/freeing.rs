//! Buffers a GPU application frees between its kernels (`cudaFree`).
//!
//! ## What it models
//! An application frees some of its buffers after a given kernel launch,
//! or when its last kernel ends. The GPU machine then frees the pages the
//! buffers cover, except a page (or a large page) that a live buffer of
//! the application also covers, as a driver keeps a page while any of its
//! bytes is allocated. This is the deallocation the Mosaic paper's
//! contiguity-aware compaction reacts to (Ausavarungnirun et al., MICRO
//! 2017, doi:10.1145/3123939.3123975, §4.4).
//! ## Choices
//! - A schedule names buffers by their allocation name and launches by
//!   number from 1 (`name@3`), or `end` (`name@end`); `*` names every
//!   buffer. A launch the application never reaches (its launches depend
//!   on its data) frees its buffers when the application ends.
//! - A kernel that touches a freed page is an error (use after free), found
//!   when the access misses every TLB and the walk finds no mapping.
//! ## Config
//! The `free` parameter of every built-in kernel, e.g. `--param
//! free=frontier@2,*@end`, or `free = "..."` in `[params.<kernel>]`.

use super::{Allocation, Kernel, KernelSource};
use crate::error::{Error, Result};

/// When a buffer is freed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum After {
    /// After launch number `0` (from 1) ends.
    Kernel(u32),
    /// After the application's last kernel.
    End,
}

/// One buffer freed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Free {
    pub after: After,
    /// Index into the application's allocations.
    pub allocation: usize,
}

/// Parse a schedule `name@N|end, ...` against `allocations`; `key` names
/// the parameter in errors.
pub fn parse(text: &str, allocations: &[Allocation], key: &str) -> Result<Vec<Free>> {
    let names = || allocations.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ");
    let mut out: Vec<Free> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, when)) = item.split_once('@') else {
            return Err(Error::config(key, format!("\"{item}\" is not BUFFER@LAUNCH (a launch number from 1, or end)")));
        };
        let after = match when.trim() {
            "end" => After::End,
            n => match n.parse::<u32>() {
                Ok(k) if k >= 1 => After::Kernel(k),
                _ => return Err(Error::config(key, format!("\"{item}\": the launch must be a number from 1, or end"))),
            },
        };
        let picked: Vec<usize> = match name.trim() {
            "*" => (0..allocations.len()).collect(),
            n => match allocations.iter().position(|a| a.name == n) {
                Some(i) => vec![i],
                None => return Err(Error::config(key, format!("no buffer \"{n}\"; the application allocates: {}", names()))),
            },
        };
        for allocation in picked {
            if out.iter().any(|f| f.allocation == allocation) {
                let n = &allocations[allocation].name;
                return Err(Error::config(key, format!("buffer \"{n}\" is freed twice")));
            }
            out.push(Free { after, allocation });
        }
    }
    Ok(out)
}

/// A kernel source with a free schedule.
pub struct Freeing {
    inner: Box<dyn KernelSource>,
    frees: Vec<Free>,
}

impl Freeing {
    /// `inner` freeing its buffers as `text` says; `key` names it in errors.
    pub fn wrap(inner: Box<dyn KernelSource>, text: &str, key: &str) -> Result<Box<dyn KernelSource>> {
        let frees = parse(text, inner.allocations(), key)?;
        Ok(Box::new(Freeing { inner, frees }))
    }
}

impl KernelSource for Freeing {
    fn allocations(&self) -> &[Allocation] {
        self.inner.allocations()
    }
    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        self.inner.next_kernel()
    }
    fn frees(&self) -> &[Free] {
        &self.frees
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allocs() -> Vec<Allocation> {
        ["a", "b", "c"].iter().enumerate().map(|(i, n)| Allocation { name: n.to_string(), base: i as u64 * 4096, bytes: 4096 }).collect()
    }

    #[test]
    fn a_schedule_names_buffers_and_launches() {
        let f = parse("b@2, a@end", &allocs(), "k").unwrap();
        assert_eq!(f, vec![Free { after: After::Kernel(2), allocation: 1 }, Free { after: After::End, allocation: 0 }]);
        let all = parse("*@1", &allocs(), "k").unwrap();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|f| f.after == After::Kernel(1)));
    }

    #[test]
    fn bad_schedules_name_the_key_and_what_is_allowed() {
        for (text, needle) in [("x@1", "a, b, c"), ("a@0", "from 1"), ("a", "BUFFER@LAUNCH"), ("a@1,a@2", "twice"), ("*@1,b@end", "twice"), ("a@soon", "end")] {
            let e = parse(text, &allocs(), "params.vector_add.free").unwrap_err().to_string();
            assert!(e.contains("params.vector_add.free") && e.contains(needle), "{text}: {e}");
        }
    }
}
