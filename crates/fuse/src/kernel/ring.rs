//! FUSE over io_uring: the per-entry header buffer (`iov[0]` of each
//! registered entry), the commands, and the SQE command area.

/// `struct fuse_uring_req_header`: `in_out` holds the `fuse_in_header`
/// on fetch and the `fuse_out_header` on commit; `op_in` the fixed
/// per-operation argument; `ring_ent_in_out` the commit id and the
/// payload size in either direction.
#[repr(C, align(8))]
pub struct ReqHeader {
    /// The `fuse_in_header` (fetch) or `fuse_out_header` (commit).
    pub in_out: [u8; 128],
    /// The fixed per-operation argument.
    pub op_in: [u8; 128],
    /// `struct fuse_uring_ent_in_out`: flags (u64), commit_id (u64),
    /// payload_sz (u32), padding (u32), reserved (u64).
    pub ent_in_out: [u8; 32],
}

impl ReqHeader {
    /// A header of zeros, for registering an entry.
    pub const fn zeroed() -> ReqHeader {
        ReqHeader { in_out: [0; 128], op_in: [0; 128], ent_in_out: [0; 32] }
    }

    /// The request's `unique`, to quote in COMMIT_AND_FETCH.
    pub fn commit_id(&self) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.ent_in_out[8..16]);
        u64::from_ne_bytes(b)
    }

    /// Bytes of payload the kernel wrote (fetch) or is to read (commit).
    pub fn payload_size(&self) -> u32 {
        let mut b = [0; 4];
        b.copy_from_slice(&self.ent_in_out[16..20]);
        u32::from_ne_bytes(b)
    }

    /// Sets the payload size of a reply about to be committed.
    pub fn set_payload_size(&mut self, size: u32) {
        self.ent_in_out[16..20].copy_from_slice(&size.to_ne_bytes());
    }
}

/// `FUSE_IO_URING_CMD_REGISTER`: hand the kernel an entry's buffers.
pub const CMD_REGISTER: u32 = 1;
/// `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`: reply, and wait for the next.
pub const CMD_COMMIT_AND_FETCH: u32 = 2;

/// `struct fuse_uring_cmd_req` in the SQE's 80-byte command area:
/// flags (u64, 0), commit_id (u64), qid (u16), padding.
pub fn cmd_req(commit_id: u64, qid: u16) -> [u8; 80] {
    let mut cmd = [0; 80];
    cmd[8..16].copy_from_slice(&commit_id.to_ne_bytes());
    cmd[16..18].copy_from_slice(&qid.to_ne_bytes());
    cmd
}
