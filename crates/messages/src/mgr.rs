//! The mgr's messages a client uses: MMgrMap (`MSG_MGR_MAP`, the monitors'
//! MgrMap, src/mon/MgrMap.h), MMgrCommand and MMgrCommandReply
//! (`MSG_MGR_COMMAND` / `MSG_MGR_COMMAND_REPLY`, src/messages/MMgrCommand.h,
//! MMgrCommandReply.h).
//!
//! The MgrMap is read as far as a client needs it (MgrClient's
//! `handle_mgr_map`): the epoch, the active mgr (gid, name, addresses,
//! whether it is available, its features), the standbys' gids and names,
//! the enabled modules and the services the active one exposes; the rest
//! of each envelope (module descriptions, `always_on_modules`, the
//! clients kept for blocklisting, fields of newer versions) is skipped by
//! its length. MgrMap v1..v5 carry the active address as one
//! `entity_addr_t` (encoders without SERVER_NAUTILUS), v6 on an
//! `entity_addrvec_t`: both are read into [`EntityAddrvec`].

use bytes::{BufMut, Bytes};
use msgr_encoding::{
    decode_versioned, encode_versioned, Decode, DecodeResult, Decoder, Encode, EntityAddrvec,
    UTime, Uuid,
};
use msgr_protocol::Message;
use std::collections::{BTreeMap, BTreeSet};

use crate::typed::{check_type, MessageError, TypedMessage};

/// `MSG_MGR_MAP`: [`MMgrMap`].
pub const MSG_MGR_MAP: u16 = 0x704;
/// `MSG_MGR_COMMAND`: [`MMgrCommand`].
pub const MSG_MGR_COMMAND: u16 = 0x709;
/// `MSG_MGR_COMMAND_REPLY`: [`MMgrCommandReply`].
pub const MSG_MGR_COMMAND_REPLY: u16 = 0x70a;

/// `CEPH_FEATUREMASK_SERVER_OCTOPUS`: bit 16 of incarnation 3 (with bits
/// 57, SERVER_JEWEL, and 28, SERVER_MIMIC). MgrClient sends MMgrCommand to
/// an active mgr whose `active_mgr_features` have all of it, MCommand to
/// an older one.
pub const FEATUREMASK_SERVER_OCTOPUS: u64 = (1 << 16) | (1 << 57) | (1 << 28);

/// The newest MgrMap version this decoder reads (Ceph 16..20 write 11).
const MGRMAP_VERSION: u8 = 11;

/// A standby mgr (`MgrMap::StandbyInfo`, its gid and name).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MgrStandby {
    /// Its global id.
    pub gid: u64,
    /// Its name (`x` of `mgr.x`).
    pub name: String,
}

/// The monitors' map of mgr daemons, as far as a client reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MgrMap {
    /// The envelope's version (what was decoded; 11 from Ceph 16..20).
    pub struct_v: u8,
    /// The map's epoch.
    pub epoch: u32,
    /// The active mgr's addresses (empty without an active mgr).
    pub active_addrs: EntityAddrvec,
    /// The active mgr's global id (0: none).
    pub active_gid: u64,
    /// Whether the active mgr has started its server (commands reach it).
    pub available: bool,
    /// The active mgr's name (`x` of `mgr.x`).
    pub active_name: String,
    /// The standbys, by gid.
    pub standbys: Vec<MgrStandby>,
    /// The enabled modules (v2+).
    pub modules: BTreeSet<String>,
    /// The services the active mgr's modules expose, by module (v3+).
    pub services: BTreeMap<String, String>,
    /// When the active mgr became active, or was lost (v7+).
    pub active_change: UTime,
    /// The active mgr's features (v9+; 0 before).
    pub active_mgr_features: u64,
}

impl MgrMap {
    /// Whether the active mgr takes MMgrCommand (SERVER_OCTOPUS in its
    /// features), as MgrClient decides; else MCommand.
    pub fn active_takes_mgr_command(&self) -> bool {
        self.active_mgr_features & FEATUREMASK_SERVER_OCTOPUS == FEATUREMASK_SERVER_OCTOPUS
    }

    /// Whether a command can go to an active mgr now (MgrClient's
    /// `reconnect` needs `available`; an address to dial too).
    pub fn has_active(&self) -> bool {
        self.available && !self.active_addrs.0.is_empty()
    }

    /// All the mgr daemons' names (the active one's and the standbys').
    pub fn names(&self) -> BTreeSet<String> {
        let mut all: BTreeSet<String> = self.standbys.iter().map(|s| s.name.clone()).collect();
        if !self.active_name.is_empty() {
            all.insert(self.active_name.clone());
        }
        all
    }
}

/// Skips one ENCODE_START envelope (a struct this client does not read).
fn skip_envelope(d: &mut Decoder<'_>, what: &'static str) -> DecodeResult<()> {
    d.skip(2, what)?;
    let len = d.u32(what)? as usize;
    d.skip(len, what)
}

/// `StandbyInfo` (v1..v4): its gid and name, the rest skipped.
fn decode_standby(d: &mut Decoder<'_>) -> DecodeResult<MgrStandby> {
    decode_versioned(d, "MgrMap::StandbyInfo", 4, |d, _| {
        Ok(MgrStandby {
            gid: d.u64("StandbyInfo.gid")?,
            name: String::decode(d)?,
        })
    })
}

impl Decode for MgrMap {
    /// The envelope's header and the epoch.
    const MIN_ENCODED_LEN: usize = 10;

    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        decode_versioned(d, "MgrMap", MGRMAP_VERSION, |d, v| {
            let mut m = MgrMap {
                struct_v: v,
                epoch: d.u32("MgrMap.epoch")?,
                active_addrs: EntityAddrvec::decode(d)?,
                active_gid: d.u64("MgrMap.active_gid")?,
                available: bool::decode(d)?,
                active_name: String::decode(d)?,
                ..Default::default()
            };
            // map<u64, StandbyInfo>: a key and an envelope header at least.
            let n = d.length("MgrMap.standbys", 14)?;
            for _ in 0..n {
                let gid = d.u64("MgrMap.standbys key")?;
                let mut s = decode_standby(d)?;
                if s.gid == 0 {
                    s.gid = gid;
                }
                m.standbys.push(s);
            }
            if v >= 2 {
                m.modules = BTreeSet::decode(d)?;
                if v < 6 {
                    // The names of the available modules (replaced by
                    // ModuleInfo in v4): not kept.
                    let _ = BTreeSet::<String>::decode(d)?;
                }
            }
            if v >= 3 {
                m.services = BTreeMap::decode(d)?;
            }
            if v >= 4 {
                // vector<ModuleInfo>: envelopes.
                let n = d.length("MgrMap.available_modules", 6)?;
                for _ in 0..n {
                    skip_envelope(d, "MgrMap::ModuleInfo")?;
                }
            }
            if v >= 7 {
                m.active_change = UTime::decode(d)?;
            }
            if v >= 8 {
                // map<u32, set<string>>: u32 key, u32 count at least.
                let n = d.length("MgrMap.always_on_modules", 8)?;
                for _ in 0..n {
                    d.u32("always_on_modules key")?;
                    let _ = BTreeSet::<String>::decode(d)?;
                }
            }
            if v >= 9 {
                m.active_mgr_features = d.u64("MgrMap.active_mgr_features")?;
            }
            // last_failure_osd_epoch (v10), clients (v11), newer fields:
            // skipped with the envelope.
            Ok(m)
        })
    }
}

impl Encode for MgrMap {
    /// As a v9 MgrMap (compat 6), with no module descriptions and no
    /// `always_on_modules`; standbys as StandbyInfo v1 (gid, name). What a
    /// test or a fuzz target writes to read back.
    fn encode(&self, out: &mut Vec<u8>) {
        encode_versioned(out, 9, 6, |o| {
            o.put_u32_le(self.epoch);
            self.active_addrs.encode(o);
            o.put_u64_le(self.active_gid);
            self.available.encode(o);
            self.active_name.encode(o);
            o.put_u32_le(self.standbys.len() as u32);
            for s in &self.standbys {
                o.put_u64_le(s.gid);
                encode_versioned(o, 1, 1, |o| {
                    o.put_u64_le(s.gid);
                    s.name.encode(o);
                });
            }
            self.modules.encode(o);
            self.services.encode(o);
            o.put_u32_le(0); // available_modules
            self.active_change.encode(o);
            o.put_u32_le(0); // always_on_modules
            o.put_u64_le(self.active_mgr_features);
        });
    }
}

/// `MMgrMap`: the MgrMap the monitors send to a `mgrmap` subscriber.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MMgrMap {
    /// The map.
    pub map: MgrMap,
}

impl TypedMessage for MMgrMap {
    const TYPE: u16 = MSG_MGR_MAP;

    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.map.encode(&mut o);
        Message::new(MSG_MGR_MAP, Bytes::from(o))
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MGR_MAP)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MMgrMap {
            map: MgrMap::decode(&mut d)?,
        })
    }
}

/// `MMgrCommand`: a command for the active mgr (what MgrClient sends to a
/// mgr with SERVER_OCTOPUS; MgrClient leaves `fsid` zero for a command
/// that is not a `tell`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MMgrCommand {
    /// The command's transaction id (the header's), echoed by the reply.
    pub tid: u64,
    /// The cluster's fsid (zero from MgrClient's `start_command`).
    pub fsid: Uuid,
    /// The command, as JSON strings.
    pub cmd: Vec<String>,
    /// The command's input (the data section).
    pub input: Bytes,
}

impl TypedMessage for MMgrCommand {
    const TYPE: u16 = MSG_MGR_COMMAND;

    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        self.fsid.encode(&mut o);
        self.cmd.encode(&mut o);
        let mut m = Message::new(MSG_MGR_COMMAND, Bytes::from(o));
        // Message's defaults in Ceph: version 1, compat 0.
        m.compat_version = 0;
        m.tid = self.tid;
        m.data = self.input.clone();
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MGR_COMMAND)?;
        let mut d = Decoder::from_bytes(&msg.front);
        Ok(MMgrCommand {
            tid: msg.tid,
            fsid: Uuid::decode(&mut d)?,
            cmd: Vec::<String>::decode(&mut d)?,
            input: msg.data.clone(),
        })
    }
}

/// `MMgrCommandReply`: the mgr's result code (`errorcode32_t`), status
/// string, and output (the data section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MMgrCommandReply {
    /// The command's transaction id (the header's).
    pub tid: u64,
    /// 0, or a negative errno.
    pub r: i32,
    /// The status string.
    pub rs: String,
    /// The command's output.
    pub output: Bytes,
}

impl TypedMessage for MMgrCommandReply {
    const TYPE: u16 = MSG_MGR_COMMAND_REPLY;

    fn to_message(&self, _: u64) -> Message {
        let mut o = Vec::new();
        o.put_i32_le(self.r);
        self.rs.encode(&mut o);
        let mut m = Message::new(MSG_MGR_COMMAND_REPLY, Bytes::from(o));
        m.compat_version = 0;
        m.tid = self.tid;
        m.data = self.output.clone();
        m
    }

    fn from_message(msg: &Message) -> Result<Self, MessageError> {
        check_type(msg, MSG_MGR_COMMAND_REPLY)?;
        let mut d = Decoder::from_bytes(&msg.front);
        let r = d.u32("MMgrCommandReply.r")? as i32;
        let rs = String::decode(&mut d)?;
        Ok(MMgrCommandReply {
            tid: msg.tid,
            r,
            rs,
            output: msg.data.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The MMgrMap fronts captured from the dev clusters (testdata/README.md).
    const PACIFIC: &[u8] = include_bytes!("../testdata/mgrmap-pacific.bin");
    const TENTACLE: &[u8] = include_bytes!("../testdata/mgrmap-tentacle.bin");

    fn captured(front: &'static [u8]) -> MgrMap {
        let msg = Message::new(MSG_MGR_MAP, Bytes::from_static(front));
        MMgrMap::from_message(&msg)
            .expect("the captured map decodes")
            .map
    }

    #[test]
    fn maps_captured_from_ceph_16_and_20_decode() {
        let p = captured(PACIFIC);
        assert_eq!((p.struct_v, p.epoch), (12, 5));
        assert_eq!(
            p.active_addrs.to_string(),
            "[v2:127.0.0.1:6824/13713,v1:127.0.0.1:6825/13713]"
        );
        assert_eq!((p.active_gid, p.active_name.as_str()), (4150, "x"));
        assert!(p.available && p.has_active() && p.standbys.is_empty());
        assert_eq!(
            p.modules.iter().map(String::as_str).collect::<Vec<_>>(),
            ["iostat", "nfs", "restful"]
        );
        assert!(p.services.is_empty());
        assert_eq!(p.active_change.sec, 1_795_887_691);
        // `ceph mgr dump`'s active_mgr_features.
        assert_eq!(p.active_mgr_features, 4_540_138_314_316_775_423);
        assert!(p.active_takes_mgr_command());

        let t = captured(TENTACLE);
        assert_eq!((t.struct_v, t.epoch), (14, 4));
        assert_eq!(
            t.active_addrs.to_string(),
            "[v2:127.0.0.1:6826/3154789432,v1:127.0.0.1:6827/3154789432]"
        );
        assert_eq!((t.active_gid, t.active_name.as_str()), (4150, "x"));
        assert!(t.has_active());
        assert!(t.modules.contains("nvmeof"));
        assert_eq!(t.active_mgr_features, 4_541_880_224_203_014_143);
        assert!(t.active_takes_mgr_command());
    }

    #[test]
    fn every_truncation_of_a_captured_map_is_an_error() {
        // A cut anywhere is refused (the envelope's length is checked
        // first: past the header, every cut is a length error), never a
        // panic.
        for cut in (0..PACIFIC.len()).step_by(97) {
            let mut d = Decoder::new(&PACIFIC[..cut]);
            assert!(MgrMap::decode(&mut d).is_err(), "cut at {cut}");
        }
        // Cut inside the body, with the envelope's length patched to fit:
        // the body's own bounds refuse it.
        for cut in (6..600).step_by(7) {
            let mut b = PACIFIC[..cut].to_vec();
            b[2..6].copy_from_slice(&((cut - 6) as u32).to_le_bytes());
            let _ = MgrMap::decode(&mut Decoder::new(&b));
        }
    }

    #[test]
    fn a_legacy_single_address_map_decodes() {
        // MgrMap v5 (an encoder without SERVER_NAUTILUS): one legacy
        // entity_addr_t, the names of the available modules before the
        // services, one ModuleInfo.
        let mut o = Vec::new();
        encode_versioned(&mut o, 5, 1, |o| {
            o.put_u32_le(9);
            let addr: msgr_encoding::EntityAddr = "v1:10.0.0.1:6800/42".parse().unwrap();
            o.extend_from_slice(&addr.encode_legacy());
            o.put_u64_le(77);
            true.encode(o);
            "a".encode(o);
            o.put_u32_le(1);
            o.put_u64_le(78);
            encode_versioned(o, 4, 1, |o| {
                o.put_u64_le(78);
                "b".encode(o);
                o.put_u32_le(0);
                o.put_u32_le(0);
                o.put_u64_le(0);
            });
            BTreeSet::from(["balancer".to_string()]).encode(o);
            BTreeSet::from(["balancer".to_string()]).encode(o);
            BTreeMap::from([("dashboard".to_string(), "http://x/".to_string())]).encode(o);
            o.put_u32_le(1);
            encode_versioned(o, 2, 1, |o| {
                "balancer".encode(o);
                true.encode(o);
                "".encode(o);
                o.put_u32_le(0);
            });
        });
        let m = MgrMap::decode(&mut Decoder::new(&o)).unwrap();
        assert_eq!(m.active_addrs.to_string(), "v1:10.0.0.1:6800/42");
        assert_eq!(
            (m.epoch, m.active_gid, m.active_name.as_str()),
            (9, 77, "a")
        );
        assert_eq!(
            m.standbys,
            [MgrStandby {
                gid: 78,
                name: "b".into()
            }]
        );
        assert_eq!(m.services["dashboard"], "http://x/");
        assert_eq!(m.active_mgr_features, 0);
        // No SERVER_OCTOPUS: MgrClient would send MCommand.
        assert!(!m.active_takes_mgr_command());
        assert_eq!(m.names().len(), 2);
    }

    #[test]
    fn a_newer_compat_is_refused() {
        let mut b = PACIFIC.to_vec();
        b[1] = MGRMAP_VERSION + 1;
        assert!(matches!(
            MgrMap::decode(&mut Decoder::new(&b)),
            Err(msgr_encoding::DecodeError::IncompatibleVersion { .. })
        ));
    }

    #[test]
    fn maps_and_commands_read_back_what_they_write() {
        let mut m = captured(TENTACLE);
        m.standbys.push(MgrStandby {
            gid: 5,
            name: "y".into(),
        });
        m.services
            .insert("prometheus".into(), "http://h:9283/".into());
        let again = MMgrMap::from_message(&MMgrMap { map: m.clone() }.to_message(0)).unwrap();
        m.struct_v = 9;
        assert_eq!(again.map, m);

        let c = MMgrCommand {
            tid: 3,
            fsid: Uuid([1; 16]),
            cmd: vec![r#"{"prefix": "balancer status"}"#.into()],
            input: Bytes::from_static(b"in"),
        };
        let msg = c.to_message(0);
        assert_eq!((msg.msg_type, msg.tid), (0x709, 3));
        assert_eq!((msg.version, msg.compat_version), (1, 0));
        // fsid, then vector<string>.
        assert_eq!(&msg.front[..16], &[1; 16]);
        assert_eq!(&msg.front[16..20], &1u32.to_le_bytes());
        assert_eq!(MMgrCommand::from_message(&msg).unwrap(), c);
        let r = MMgrCommandReply {
            tid: 3,
            r: -22,
            rs: "No handler found for 'x'".into(),
            output: Bytes::from_static(b"{}"),
        };
        let msg = r.to_message(0);
        assert_eq!(&msg.front[..4], &(-22i32).to_le_bytes());
        assert_eq!(MMgrCommandReply::from_message(&msg).unwrap(), r);
        assert!(MMgrCommandReply::from_message(&c.to_message(0)).is_err());
    }
}
