//! cephx's structures and their encodings (src/auth/cephx/CephxProtocol.h,
//! src/auth/Auth.h; docs/research/cephx-protocol.md §3). cephx writes a
//! bare `u8 struct_v` where it versions a structure, never ENCODE_START.

use bytes::{BufMut, Bytes};
use msgr_encoding::{
    encoding, AuthName, Decode, DecodeError, DecodeResult, Decoder, Encode, UTime,
};

use super::crypto::CryptoError;
use super::key::CryptoKey;
use crate::{Random, Secret};

/// `CEPHX_GET_*` request types.
pub mod request {
    /// `CEPHX_GET_AUTH_SESSION_KEY`: authenticate to the monitors and get the auth ticket.
    pub const GET_AUTH_SESSION_KEY: u16 = 0x0100;
    /// `CEPHX_GET_PRINCIPAL_SESSION_KEY`: get tickets for services (OSD, MDS, MGR) with the
    /// auth ticket.
    pub const GET_PRINCIPAL_SESSION_KEY: u16 = 0x0200;
    /// `CEPHX_GET_ROTATING_KEY`: a daemon gets its service's rotating secrets.
    pub const GET_ROTATING_KEY: u16 = 0x0400;
}

/// First byte of an AUTH_REQUEST payload: `AUTH_MODE_MON` for a monitor
/// session, `AUTH_MODE_AUTHORIZER` (1..=9) for a service (Auth.h).
pub const AUTH_MODE_AUTHORIZER: u8 = 1;
/// The first auth mode of a monitor session (`AUTH_MODE_MON`).
pub const AUTH_MODE_MON: u8 = 10;
/// The last auth mode of a monitor session (`AUTH_MODE_MON_MAX`).
pub const AUTH_MODE_MON_MAX: u8 = 19;

/// `AUTH_ENC_MAGIC`: proves a decryption used the right key.
pub const AUTH_ENC_MAGIC: u64 = 0xff00_9cad_8826_aa55;

/// `CEPH_AUTH_UID_DEFAULT`, the retired auid.
pub const AUTH_UID_DEFAULT: u64 = u64::MAX;

encoding! {
    /// `CephXRequestHeader`: the request type that opens every cephx request.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct RequestHeader {
        /// The request type ([`request`]).
        pub request_type: u16,
    }
}

encoding! {
    /// `CephXResponseHeader`: the request type answered, and how it went.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ResponseHeader {
        /// The request type answered ([`request`]).
        pub request_type: u16,
        /// 0, or a negative errno.
        pub status: i32,
    }
}

encoding! {
    #[struct_v = 1]
    /// `CephXServerChallenge`: the mon's first answer.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ServerChallenge {
        /// The monitor's random challenge, which the client's key proof covers.
        pub server_challenge: u64,
    }
}

encoding! {
    #[struct_v = 1]
    /// `CephXTicketBlob`: a ticket as the client holds it; `blob` is the
    /// service's sealed `CephXServiceTicketInfo`, opaque to the client.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct TicketBlob {
        /// Which of the service's rotating secrets sealed the blob.
        pub secret_id: u64,
        /// The sealed `CephXServiceTicketInfo`.
        pub blob: Bytes,
    }
}

/// `CephXAuthenticate` (v3: the client promises to present its old ticket
/// when reclaiming a global id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticate {
    /// The encoding version the client wrote (3 to promise its old ticket).
    pub struct_v: u8,
    /// The client's random challenge.
    pub client_challenge: u64,
    /// The proof of the client's key: the two challenges encrypted with it, folded to 64 bits.
    pub key: u64,
    /// The auth ticket the client held before, when it reclaims its global id.
    pub old_ticket: TicketBlob,
    /// `CEPH_ENTITY_TYPE_*` bits of the tickets wanted in the same reply.
    pub other_keys: u32,
}

impl Encode for Authenticate {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.struct_v);
        out.put_u64_le(self.client_challenge);
        out.put_u64_le(self.key);
        self.old_ticket.encode(out);
        if self.struct_v >= 2 {
            out.put_u32_le(self.other_keys);
        }
    }
}

impl Decode for Authenticate {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let struct_v = d.u8("CephXAuthenticate.struct_v")?;
        let client_challenge = d.u64("CephXAuthenticate.client_challenge")?;
        let key = d.u64("CephXAuthenticate.key")?;
        let old_ticket = TicketBlob::decode(d)?;
        let other_keys = match struct_v >= 2 {
            true => d.u32("CephXAuthenticate.other_keys")?,
            false => 0,
        };
        Ok(Authenticate {
            struct_v,
            client_challenge,
            key,
            old_ticket,
            other_keys,
        })
    }
}

encoding! {
    #[struct_v = 1]
    /// `CephXServiceTicket`: the client's half of a ticket.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ServiceTicket {
        /// The session key the client shares with the service.
        pub session_key: CryptoKey,
        /// How long the ticket is valid from its issue.
        pub validity: UTime,
    }
}

encoding! {
    #[struct_v = 1]
    /// `AuthCapsInfo`: `caps` holds an encoded string of the service's caps.
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
    pub struct CapsInfo {
        /// The holder may do anything (`allow_all`).
        pub allow_all: bool,
        /// The encoded caps string.
        pub caps: Bytes,
    }
}

/// `AuthTicket` (v2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthTicket {
    /// Who the ticket is for.
    pub name: AuthName,
    /// The holder's global id.
    pub global_id: u64,
    /// When the ticket was issued.
    pub created: UTime,
    /// When it stops being valid.
    pub expires: UTime,
    /// What the holder may do.
    pub caps: CapsInfo,
    /// Ticket flags (unused by Ceph today, kept as received).
    pub flags: u32,
}

impl Encode for AuthTicket {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(2);
        self.name.encode(out);
        out.put_u64_le(self.global_id);
        out.put_u64_le(AUTH_UID_DEFAULT);
        self.created.encode(out);
        self.expires.encode(out);
        self.caps.encode(out);
        out.put_u32_le(self.flags);
    }
}

impl Decode for AuthTicket {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let v = d.u8("AuthTicket.struct_v")?;
        let name = AuthName::decode(d)?;
        let global_id = d.u64("AuthTicket.global_id")?;
        if v >= 2 {
            d.u64("AuthTicket.auid")?;
        }
        Ok(AuthTicket {
            name,
            global_id,
            created: UTime::decode(d)?,
            expires: UTime::decode(d)?,
            caps: CapsInfo::decode(d)?,
            flags: d.u32("AuthTicket.flags")?,
        })
    }
}

encoding! {
    #[struct_v = 1]
    /// `CephXServiceTicketInfo`: what a ticket blob seals for the service.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct ServiceTicketInfo {
        /// Who the holder is and what it may do.
        pub ticket: AuthTicket,
        /// The session key the service shares with the holder.
        pub session_key: CryptoKey,
    }
}

encoding! {
    #[struct_v = 1]
    /// `CephXServiceTicketRequest`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ServiceTicketRequest {
        /// `CEPH_ENTITY_TYPE_*` bits of the services whose tickets are wanted.
        pub keys: u32,
    }
}

/// `CephXAuthorize` (v2): authorizer part b.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authorize {
    /// The client's random nonce; the reply proves the service read it (nonce + 1).
    pub nonce: u64,
    /// The authorizer answers a CephXAuthorizeChallenge (the CVE-2018-1128 round).
    pub have_challenge: bool,
    /// That challenge plus one, when it does.
    pub server_challenge_plus_one: u64,
}

impl Encode for Authorize {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(2);
        out.put_u64_le(self.nonce);
        self.have_challenge.encode(out);
        out.put_u64_le(self.server_challenge_plus_one);
    }
}

impl Decode for Authorize {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let v = d.u8("CephXAuthorize.struct_v")?;
        let nonce = d.u64("CephXAuthorize.nonce")?;
        let (have_challenge, server_challenge_plus_one) = match v >= 2 {
            true => (
                bool::decode(d)?,
                d.u64("CephXAuthorize.server_challenge_plus_one")?,
            ),
            false => (false, 0),
        };
        Ok(Authorize {
            nonce,
            have_challenge,
            server_challenge_plus_one,
        })
    }
}

encoding! {
    #[struct_v = 1]
    /// `CephXAuthorizeChallenge` (the CVE-2018-1128 round).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct AuthorizeChallenge {
        /// The service's random challenge the client's next authorizer must answer.
        pub server_challenge: u64,
    }
}

/// `CephXAuthorizeReply`: v1 without, v2 with a connection secret (never
/// printed: its Debug shows the length).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizeReply {
    /// The authorizer's nonce plus one: proof the service holds the session key.
    pub nonce_plus_one: u64,
    /// The secret msgr2's secure mode derives its keys from (empty in v1).
    pub connection_secret: Secret,
}

impl Encode for AuthorizeReply {
    fn encode(&self, out: &mut Vec<u8>) {
        let v2 = !self.connection_secret.is_empty();
        out.put_u8(if v2 { 2 } else { 1 });
        out.put_u64_le(self.nonce_plus_one);
        if v2 {
            self.connection_secret.encode(out);
        }
    }
}

impl Decode for AuthorizeReply {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let v = d.u8("CephXAuthorizeReply.struct_v")?;
        let nonce_plus_one = d.u64("CephXAuthorizeReply.nonce_plus_one")?;
        let connection_secret = match v >= 2 {
            true => Secret::decode(d)?,
            false => Secret::default(),
        };
        Ok(AuthorizeReply {
            nonce_plus_one,
            connection_secret,
        })
    }
}

/// The authorizer a client presents to a service (CephXTicketHandler::
/// build_authorizer): part a in the clear, part b encrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizerHead {
    /// The client's global id.
    pub global_id: u64,
    /// The `CEPH_ENTITY_TYPE_*` of the service the ticket is for.
    pub service_id: u32,
    /// The service's ticket blob, which only the service can open.
    pub ticket: TicketBlob,
}

impl Encode for AuthorizerHead {
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(AUTH_MODE_AUTHORIZER);
        out.put_u64_le(self.global_id);
        out.put_u32_le(self.service_id);
        self.ticket.encode(out);
    }
}

impl Decode for AuthorizerHead {
    fn decode(d: &mut Decoder<'_>) -> DecodeResult<Self> {
        let mode = d.u8("authorizer auth_mode")?;
        if !(1..=9).contains(&mode) {
            return Err(DecodeError::InvalidValue {
                what: "authorizer auth_mode",
                value: mode as u64,
            });
        }
        Ok(AuthorizerHead {
            global_id: d.u64("authorizer global_id")?,
            service_id: d.u32("authorizer service_id")?,
            ticket: TicketBlob::decode(d)?,
        })
    }
}

/// Why an encrypted cephx object could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvelopeError {
    /// Decryption failed (a bad length or padding).
    Crypto(CryptoError),
    /// Decrypted, but not with the right key (`bad magic in decode_decrypt`).
    BadMagic,
    /// Decrypted, but the contents do not decode.
    Decode(DecodeError),
}

impl std::fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnvelopeError::Crypto(e) => write!(f, "{e}"),
            EnvelopeError::BadMagic => f.write_str("bad magic after decryption (wrong key)"),
            EnvelopeError::Decode(e) => write!(f, "{e}"),
        }
    }
}

/// `encode_encrypt_enc_bl`: the ciphertext of `u8 1, u64 AUTH_ENC_MAGIC,
/// encode(value)`, without a length.
pub fn seal<T: Encode + ?Sized>(
    key: &CryptoKey,
    usage: u32,
    value: &T,
    rng: &dyn Random,
) -> Vec<u8> {
    // The plaintext may hold keys (session keys, connection secrets).
    let mut plain = zeroize::Zeroizing::new(Vec::with_capacity(64));
    plain.put_u8(1);
    plain.put_u64_le(AUTH_ENC_MAGIC);
    value.encode(&mut plain);
    key.encrypt(usage, &plain, rng)
}

/// `encode_encrypt`: [`seal`] with a u32 length in front, appended to `out`.
pub fn seal_into<T: Encode + ?Sized>(
    out: &mut Vec<u8>,
    key: &CryptoKey,
    usage: u32,
    value: &T,
    rng: &dyn Random,
) {
    let ct = seal(key, usage, value, rng);
    out.put_u32_le(ct.len() as u32);
    out.extend_from_slice(&ct);
}

/// `decode_decrypt_enc_bl`: the value sealed in `ciphertext`.
pub fn open<T: Decode>(key: &CryptoKey, usage: u32, ciphertext: &[u8]) -> Result<T, EnvelopeError> {
    // Wiped once decoded: it may hold keys.
    let plain = zeroize::Zeroizing::new(
        key.decrypt(usage, ciphertext)
            .map_err(EnvelopeError::Crypto)?,
    );
    let mut d = Decoder::new(&plain);
    let _struct_v = d.u8("envelope struct_v").map_err(EnvelopeError::Decode)?;
    let magic = d
        .take(8, "envelope magic")
        .map_err(|_| EnvelopeError::BadMagic)?;
    if !crate::ct_eq(magic, &AUTH_ENC_MAGIC.to_le_bytes()) {
        return Err(EnvelopeError::BadMagic);
    }
    T::decode(&mut d).map_err(EnvelopeError::Decode)
}

/// `decode_decrypt`: reads a u32 length and the ciphertext from `d`, opens it.
pub fn open_from<T: Decode>(
    d: &mut Decoder<'_>,
    key: &CryptoKey,
    usage: u32,
) -> Result<T, EnvelopeError> {
    let len = d
        .length("encrypted blob", 1)
        .map_err(EnvelopeError::Decode)?;
    let ct = d
        .take(len, "encrypted blob")
        .map_err(EnvelopeError::Decode)?;
    open(key, usage, ct)
}

/// `cephx_calc_client_server_challenge` (docs/research/cephx-protocol.md
/// §5): for `aes`, the XOR of the 64-bit words of `encode_encrypt` of the
/// challenge blob — its u32 length prefix included, so the ciphertext's
/// last 4 bytes drop out; for `aes256k`, the XOR of the words of
/// HMAC-SHA256(secret, blob).
pub fn client_server_challenge(
    key: &CryptoKey,
    server_challenge: u64,
    client_challenge: u64,
) -> u64 {
    let mut blob = [0u8; 16];
    blob[..8].copy_from_slice(&server_challenge.to_le_bytes());
    blob[8..].copy_from_slice(&client_challenge.to_le_bytes());
    let folded: Vec<u8> = match key.kind {
        super::KeyKind::Aes256k => key.hmac_sha256(&[&blob]).to_vec(),
        _ => {
            // The AES path is deterministic (fixed IV), so no randomness is drawn.
            let mut enc = Vec::new();
            seal_into(&mut enc, key, 0, &RawBytes(&blob), &crate::SystemRandom);
            enc
        }
    };
    folded
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .fold(0, |a, w| a ^ w)
}

/// Bytes encoded as themselves (no length), for sealing a fixed layout.
pub struct RawBytes<'a>(pub &'a [u8]);

impl Encode for RawBytes<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cephx::KeyKind;
    use msgr_encoding::hex;

    fn key(kind: KeyKind, secret: &str) -> CryptoKey {
        CryptoKey::new(kind, UTime::default(), hex::decode(secret).unwrap()).unwrap()
    }

    #[test]
    fn challenge_keys_of_the_captures() {
        // docs/research/cephx-protocol.md §5.1 / §5.2.
        let aes = key(KeyKind::Aes128, "fdccd7f692a0edea42556bf9b35d9d03");
        assert_eq!(
            client_server_challenge(&aes, 0x7105149a4504c056, 0x492121c797de2bc6),
            0xf88168d0994c78b1
        );
        let k256 = key(
            KeyKind::Aes256k,
            "f8bc79b89604385a20824da7879fccab8ee379649ddeafb721f37f5d3b6a8cd2",
        );
        assert_eq!(
            client_server_challenge(&k256, 0xb353e2b7434634ae, 0xee6dbf7b94b952e6),
            0x7b58f35fc127ce60
        );
    }

    #[test]
    fn captured_aes_ticket_opens() {
        // §4.4 of cephx-crypto.md: pacific-ceph-s.pcap's AUTH ticket.
        let aes = key(KeyKind::Aes128, "fdccd7f692a0edea42556bf9b35d9d03");
        let ct = hex::decode("0e4eda254a6c76b21ad39ebf25c2e09184e02e140f9848977ee4e0ff650daef73604f2fd284adb4b6acb215ecb3f0f61").unwrap();
        let t: ServiceTicket = open(&aes, super::super::usage::TICKET_SESSION_KEY, &ct).unwrap();
        assert_eq!(t.session_key.kind, KeyKind::Aes128);
        assert_eq!(t.validity.sec, 259200);
        let wrong = key(KeyKind::Aes128, "00ccd7f692a0edea42556bf9b35d9d03");
        assert_eq!(
            open::<ServiceTicket>(&wrong, 4, &ct).unwrap_err(),
            EnvelopeError::BadMagic
        );
    }

    #[test]
    fn structures_round_trip() {
        let rng = crate::SeededRandom::new(1);
        let sk = CryptoKey::random(KeyKind::Aes256k, UTime::default(), &rng);
        let info = ServiceTicketInfo {
            ticket: AuthTicket {
                name: AuthName::client_admin(),
                global_id: 4127,
                created: UTime { sec: 1, nsec: 2 },
                expires: UTime { sec: 3, nsec: 4 },
                caps: CapsInfo {
                    allow_all: false,
                    caps: Bytes::from_static(b"\x07\0\0\0allow *"),
                },
                flags: 0,
            },
            session_key: sk.clone(),
        };
        let sealed = seal(&sk, 0x30, &info, &rng);
        assert_eq!(open::<ServiceTicketInfo>(&sk, 0x30, &sealed).unwrap(), info);
        let auth = Authenticate {
            struct_v: 3,
            client_challenge: 1,
            key: 2,
            old_ticket: TicketBlob::default(),
            other_keys: 0x35,
        };
        // 36 bytes with the request header, as in the captures (§6.3).
        assert_eq!(2 + auth.to_bytes().len(), 36);
        assert_eq!(
            Authenticate::decode_exact(&auth.to_bytes(), "a").unwrap(),
            auth
        );
        let reply = AuthorizeReply {
            nonce_plus_one: 9,
            connection_secret: Secret::new(vec![1; 64]),
        };
        // Its Debug names the secret's length, never its bytes.
        assert_eq!(
            format!("{reply:?}"),
            "AuthorizeReply { nonce_plus_one: 9, connection_secret: Secret(64 bytes) }"
        );
        assert_eq!(
            AuthorizeReply::decode_exact(&reply.to_bytes(), "r").unwrap(),
            reply
        );
        assert_eq!(
            AuthorizeReply {
                nonce_plus_one: 9,
                connection_secret: Secret::default()
            }
            .to_bytes()[0],
            1
        );
    }
}
