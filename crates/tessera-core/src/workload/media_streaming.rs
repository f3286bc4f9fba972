//! `media-streaming`: many concurrent clients each reading a media file
//! sequentially, served round-robin (CloudSuite media streaming analog).
//!
//! ## What it models
//! The data path of a streaming server (Darwin Streaming Server in CloudSuite)
//! sending RTP packets to `streams` clients:
//! - a library of `files` media files of `file_size` bytes, each mmapped the
//!   first time a client opens it and kept mapped (the page cache keeps
//!   popular files resident); clients choose files by a Zipfian popularity
//!   (`theta`), so popular files are read by several clients at different
//!   offsets;
//! - per client, a malloc'd session `{file, offset, sequence number,
//!   timestamp, ...}` and a packet buffer;
//! - the server visits the clients round-robin; on its turn a client sends the
//!   next `chunk` bytes of its file as RTP packets of up to 1448 bytes of
//!   payload: per packet a 12-byte RTP header is written into the packet
//!   buffer, the payload is copied in from the file, and `sendmsg` (the
//!   kernel) reads the packet back out; then the session is updated;
//! - a client that reaches the end of its file opens another (chosen the same
//!   way) from the start; at the beginning clients are spread over their files
//!   at random chunk-aligned offsets, as on a server that has been running.
//!
//! The run streams `bytes` bytes in total.
//!
//! Instruction model: 50 per turn (scheduling, session loads); 20 per packet
//! (header build, `sendmsg` call) plus 4 per 64 bytes copied into the packet
//! and 2 per 64 bytes the kernel reads; 100 to open a file.
//!
//! Dependencies: the payload loads from the file depend on the session's
//! offset load (the file position), except on a turn that opened a new file
//! (its base and offset 0 are then in registers). Session, header, packet
//! buffer and the kernel's reads have none.
//!
//! ## Choices
//! - Reading the file through an mmap stands for reading it from the page
//!   cache; disk I/O, the network stack's own buffers and the RTSP control
//!   connection are not modelled.
//! - Every client streams at the same rate (one chunk per turn).

use rand::Rng;

use super::emit::Dep;
use super::kit::{copy_range_on, load_range};
use super::zipf::Zipf;
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::{component_rng, SimRng};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "media-streaming",
    summary: "streaming server: round-robin clients each reading a Zipf-chosen media file sequentially",
    params: PARAMS,
    footprint: |p| Config::from(p).map(|c| c.estimate_bytes()),
    build: |p| Ok(Box::new(MediaStreaming::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "streams", default: "200", doc: "concurrent client streams" },
    ParamDoc { name: "files", default: "128", doc: "media files in the library" },
    ParamDoc { name: "file_size", default: "2MiB", doc: "bytes per file, 64KiB to 64GiB" },
    ParamDoc { name: "chunk", default: "16KiB", doc: "bytes a stream sends per turn, 1448 to 1MiB" },
    ParamDoc { name: "bytes", default: "1GiB", doc: "total bytes streamed" },
    ParamDoc { name: "theta", default: "0.8", doc: "Zipfian skew of file popularity, 0 (uniform) to 0.9999" },
];

const PAYLOAD: u64 = 1448;
const RTP_HEADER: u64 = 12;
const PACKET: u64 = 1460;
const SESSION_BYTES: u64 = 256;

#[derive(Clone, Debug)]
struct Config {
    streams: usize,
    files: u64,
    file_size: u64,
    chunk: u64,
    bytes: u64,
    theta: f64,
}

impl Config {
    fn from(p: &Params) -> Result<Config> {
        Ok(Config {
            streams: p.count_in("streams", 1, 1 << 20)? as usize,
            files: p.count_in("files", 1, 1 << 24)?,
            file_size: p.size_in("file_size", 64 << 10, 64 << 30)?,
            chunk: p.size_in("chunk", PAYLOAD, 1 << 20)?,
            bytes: p.size("bytes")?,
            theta: p.real_in("theta", 0.0, 0.9999)?,
        })
    }

    fn buf_bytes(&self) -> u64 {
        self.chunk.div_ceil(PAYLOAD) * PACKET
    }

    fn estimate_bytes(&self) -> u64 {
        self.files * self.file_size + self.streams as u64 * (SESSION_BYTES + self.buf_bytes())
    }
}

struct Stream {
    session: u64,
    buf: u64,
    file: usize,
    offset: u64,
}

/// The server: files (mapped on first open) and client streams.
pub struct Server {
    cfg: Config,
    file_addr: Vec<Option<u64>>,
    streams: Vec<Stream>,
    zipf: Zipf,
    rng: SimRng,
}

impl Server {
    fn new(cfg: Config, seed: u64, space: &mut AddressSpace) -> Result<Server> {
        let zipf = Zipf::new(cfg.files, cfg.theta)?;
        let mut s = Server {
            file_addr: vec![None; cfg.files as usize],
            streams: Vec::with_capacity(cfg.streams),
            zipf,
            rng: component_rng(seed, "workload.media-streaming.clients"),
            cfg,
        };
        let chunks_per_file = s.cfg.file_size.div_ceil(s.cfg.chunk);
        for _ in 0..s.cfg.streams {
            let session = space.malloc(SESSION_BYTES);
            let buf = space.malloc(s.cfg.buf_bytes());
            let file = s.zipf.next(&mut s.rng) as usize;
            let offset = s.rng.gen_range(0..chunks_per_file) * s.cfg.chunk;
            s.streams.push(Stream { session, buf, file, offset });
        }
        Ok(s)
    }

    fn file(&mut self, f: usize, space: &mut AddressSpace) -> u64 {
        *self.file_addr[f].get_or_insert_with(|| space.mmap(self.cfg.file_size))
    }

    /// Stream `s`'s turn: returns (file, offset, bytes) sent.
    fn turn(&mut self, s: usize, space: &mut AddressSpace, e: &mut Emitter) -> (usize, u64, u64) {
        let (session, buf) = (self.streams[s].session, self.streams[s].buf);
        e.ins(50);
        e.load(session, 8);
        let mut doff = e.load_on(session + 8, 8, Dep::NONE);
        e.load(session + 16, 8);
        if self.streams[s].offset >= self.cfg.file_size {
            doff = Dep::NONE;
            e.ins(100);
            let f = self.zipf.next(&mut self.rng) as usize;
            self.streams[s].file = f;
            self.streams[s].offset = 0;
            e.store(session, 8);
            e.store(session + 8, 8);
        }
        let (f, off) = (self.streams[s].file, self.streams[s].offset);
        let base = self.file(f, space);
        let n = self.cfg.chunk.min(self.cfg.file_size - off);
        let mut sent = 0;
        let mut pkt = buf;
        while sent < n {
            let len = PAYLOAD.min(n - sent);
            e.ins(20);
            e.store(pkt, 8);
            e.store(pkt + 8, 4);
            copy_range_on(e, base + off + sent, pkt + RTP_HEADER, len, 4, doff, Dep::NONE);
            load_range(e, pkt, RTP_HEADER + len, 2);
            sent += len;
            pkt += PACKET;
        }
        e.ins(6);
        e.store(session + 8, 8);
        e.store(session + 16, 8);
        e.store(session + 24, 8);
        self.streams[s].offset += n;
        (f, off, n)
    }
}

pub struct MediaStreaming {
    cfg: Config,
    seed: u64,
    /// Files opened at least once (set by `run`).
    pub files_opened: usize,
}

impl MediaStreaming {
    pub fn new(p: &Params) -> Result<MediaStreaming> {
        Ok(MediaStreaming { cfg: Config::from(p)?, seed: p.seed(), files_opened: 0 })
    }
}

impl Workload for MediaStreaming {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let mut server = Server::new(self.cfg.clone(), self.seed, &mut space)?;
        let (mut streamed, mut turn) = (0u64, 0u64);
        while streamed < self.cfg.bytes {
            let s = (turn % self.cfg.streams as u64) as usize;
            streamed += server.turn(s, &mut space, e).2;
            turn += 1;
            if turn % 256 == 0 {
                e.progress(streamed.min(self.cfg.bytes), self.cfg.bytes);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(self.cfg.bytes, self.cfg.bytes);
        self.files_opened = server.file_addr.iter().filter(|f| f.is_some()).count();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::AccessKind;
    use crate::workload::emit::VecSink;
    use crate::workload::tests::{distinct_pages, emitted, params};

    fn cfg(kv: &[(&str, &str)]) -> Config {
        Config::from(&Params::resolve("media-streaming", PARAMS, &params(kv), 0).unwrap()).unwrap()
    }

    #[test]
    fn each_stream_reads_its_file_sequentially_round_robin() {
        let c = cfg(&[("streams", "7"), ("files", "5"), ("file_size", "64KiB"), ("chunk", "5000")]);
        let mut space = AddressSpace::new();
        let mut srv = Server::new(c.clone(), 3, &mut space).unwrap();
        let mut last: Vec<Option<(usize, u64)>> = vec![None; 7];
        let mut restarts = 0;
        for turn in 0..2000 {
            let s = turn % 7;
            let mut sink = VecSink::default();
            let mut e = Emitter::new(&mut sink);
            let (f, off, n) = srv.turn(s, &mut space, &mut e);
            e.finish();
            if let Some((pf, end)) = last[s] {
                if end < c.file_size {
                    assert_eq!((f, off), (pf, end), "stream {s} skipped");
                } else {
                    assert_eq!(off, 0, "stream {s} did not restart");
                    restarts += 1;
                }
            }
            assert!(n > 0 && off + n <= c.file_size);
            last[s] = Some((f, off + n));
            // The file bytes read are exactly [off, off + n).
            let base = srv.file_addr[f].unwrap();
            let file_loads: Vec<_> = sink
                .records
                .iter()
                .filter(|r| r.2 == AccessKind::Load && r.1 >= base && r.1 < base + c.file_size)
                .collect();
            assert_eq!(file_loads.first().unwrap().1, base + off);
            let bytes: u64 = file_loads.iter().map(|r| r.3 as u64).sum();
            assert_eq!(bytes, n);
            assert!(file_loads.windows(2).all(|w| w[0].1 < w[1].1));
        }
        assert!(restarts > 10);
    }

    #[test]
    fn footprint_is_the_files_read() {
        let kv = [("streams", "20"), ("files", "8"), ("file_size", "1MiB"), ("bytes", "64MiB"), ("theta", "0")];
        let recs = emitted("media-streaming", &kv, 1);
        let pages = distinct_pages(&recs) as f64;
        let est = cfg(&kv).estimate_bytes() as f64 / 4096.0;
        assert!(pages > 0.97 * est && pages <= est + 2.0, "pages {pages} vs estimate {est}");
        // Skewed popularity leaves unpopular files unread in a short run.
        let skewed = [("streams", "4"), ("files", "1000"), ("file_size", "64KiB"), ("bytes", "8MiB"), ("theta", "0.99")];
        let p = Params::resolve("media-streaming", PARAMS, &params(&skewed), 1).unwrap();
        let mut w = MediaStreaming::new(&p).unwrap();
        let mut null = crate::workload::NullSink;
        w.run(&mut Emitter::new(&mut null)).unwrap();
        assert!(w.files_opened < 200, "{} files opened", w.files_opened);
    }
}
