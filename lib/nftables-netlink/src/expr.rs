//! The expressions rules are made of, as the kernel takes them: loads into registers (meta,
//! payload), comparisons, masks, set lookups, immediate verdicts, counters and masquerade.
//! `nft --debug=netlink` prints rules in these terms.

use crate::attr::{self, AttrWriter};
use crate::sys::*;
use crate::verdict::Verdict;
use crate::Error;

/// The verdict register: an immediate or a map lookup writing here decides.
pub const REG_VERDICT: u32 = 0;
/// The first 16-byte data register, the one nft uses.
pub const REG_1: u32 = 1;

/// `meta <key>`
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaKey {
    /// The link-layer protocol (ethertype).
    Protocol,
    Iifname,
    Oifname,
    /// The family of the packet (NFPROTO_IPV4 or _IPV6), which `ip`/`ip6` matches in an inet
    /// table depend on.
    Nfproto,
    Other(u32),
}

impl MetaKey {
    fn number(self) -> u32 {
        match self {
            MetaKey::Protocol => 1,
            MetaKey::Iifname => 6,
            MetaKey::Oifname => 7,
            MetaKey::Nfproto => 15,
            MetaKey::Other(n) => n,
        }
    }

    fn from_number(n: u32) -> MetaKey {
        match n {
            1 => MetaKey::Protocol,
            6 => MetaKey::Iifname,
            7 => MetaKey::Oifname,
            15 => MetaKey::Nfproto,
            n => MetaKey::Other(n),
        }
    }
}

/// Where a payload load counts its offset from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadBase {
    LinkLayer,
    Network,
    Transport,
}

impl PayloadBase {
    fn number(self) -> u32 {
        match self {
            PayloadBase::LinkLayer => 0,
            PayloadBase::Network => 1,
            PayloadBase::Transport => 2,
        }
    }

    fn from_number(n: u32) -> Option<PayloadBase> {
        Some(match n {
            0 => PayloadBase::LinkLayer,
            1 => PayloadBase::Network,
            2 => PayloadBase::Transport,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Neq,
    Lt,
    Lte,
    Gt,
    Gte,
}

impl CmpOp {
    fn number(self) -> u32 {
        self as u32
    }

    fn from_number(n: u32) -> Option<CmpOp> {
        [
            CmpOp::Eq,
            CmpOp::Neq,
            CmpOp::Lt,
            CmpOp::Lte,
            CmpOp::Gt,
            CmpOp::Gte,
        ]
        .into_iter()
        .find(|op| op.number() == n)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// `[ meta load <key> => reg <dreg> ]`
    Meta { key: MetaKey, dreg: u32 },
    /// `[ payload load <len>b @ <base> header + <offset> => reg <dreg> ]`
    Payload {
        base: PayloadBase,
        offset: u32,
        len: u32,
        dreg: u32,
    },
    /// `[ cmp <op> reg <sreg> <data> ]`
    Cmp { op: CmpOp, sreg: u32, data: Vec<u8> },
    /// `[ bitwise reg <dreg> = ( reg <sreg> & <mask> ) ^ <xor> ]`
    Bitwise {
        sreg: u32,
        dreg: u32,
        mask: Vec<u8>,
        xor: Vec<u8>,
    },
    /// `[ lookup reg <sreg> set <set> (dreg <dreg>) ]`: a map lookup when `dreg` is set; with
    /// the verdict register, a verdict map (`vmap`).
    Lookup {
        set: String,
        sreg: u32,
        dreg: Option<u32>,
    },
    /// `[ immediate reg 0 <verdict> ]`
    Verdict(Verdict),
    /// `[ counter pkts <packets> bytes <bytes> ]`
    Counter { packets: u64, bytes: u64 },
    /// `[ masq ]`
    Masquerade,
    /// An expression this crate does not decode, by its name.
    Other(String),
}

impl Expr {
    fn name(&self) -> &str {
        match self {
            Expr::Meta { .. } => "meta",
            Expr::Payload { .. } => "payload",
            Expr::Cmp { .. } => "cmp",
            Expr::Bitwise { .. } => "bitwise",
            Expr::Lookup { .. } => "lookup",
            Expr::Verdict(_) => "immediate",
            Expr::Counter { .. } => "counter",
            Expr::Masquerade => "masq",
            Expr::Other(name) => name,
        }
    }

    /// The attributes of one NFTA_LIST_ELEM of NFTA_RULE_EXPRESSIONS.
    pub(crate) fn encode(&self, w: &mut AttrWriter) {
        w.str(NFTA_EXPR_NAME, self.name());
        w.nested(NFTA_EXPR_DATA, |d| match self {
            Expr::Meta { key, dreg } => {
                d.u32(NFTA_META_DREG, *dreg)
                    .u32(NFTA_META_KEY, key.number());
            }
            Expr::Payload {
                base,
                offset,
                len,
                dreg,
            } => {
                d.u32(NFTA_PAYLOAD_DREG, *dreg)
                    .u32(NFTA_PAYLOAD_BASE, base.number())
                    .u32(NFTA_PAYLOAD_OFFSET, *offset)
                    .u32(NFTA_PAYLOAD_LEN, *len);
            }
            Expr::Cmp { op, sreg, data } => {
                d.u32(NFTA_CMP_SREG, *sreg)
                    .u32(NFTA_CMP_OP, op.number())
                    .nested(NFTA_CMP_DATA, |v| {
                        v.bytes(NFTA_DATA_VALUE, data);
                    });
            }
            Expr::Bitwise {
                sreg,
                dreg,
                mask,
                xor,
            } => {
                d.u32(NFTA_BITWISE_SREG, *sreg)
                    .u32(NFTA_BITWISE_DREG, *dreg)
                    .u32(NFTA_BITWISE_LEN, mask.len() as u32)
                    .nested(NFTA_BITWISE_MASK, |v| {
                        v.bytes(NFTA_DATA_VALUE, mask);
                    })
                    .nested(NFTA_BITWISE_XOR, |v| {
                        v.bytes(NFTA_DATA_VALUE, xor);
                    });
            }
            Expr::Lookup { set, sreg, dreg } => {
                d.str(NFTA_LOOKUP_SET, set).u32(NFTA_LOOKUP_SREG, *sreg);
                if let Some(dreg) = dreg {
                    d.u32(NFTA_LOOKUP_DREG, *dreg);
                }
            }
            Expr::Verdict(verdict) => {
                d.u32(NFTA_IMMEDIATE_DREG, REG_VERDICT)
                    .nested(NFTA_IMMEDIATE_DATA, |v| verdict.encode(v));
            }
            Expr::Counter { packets, bytes } => {
                d.u64(NFTA_COUNTER_BYTES, *bytes)
                    .u64(NFTA_COUNTER_PACKETS, *packets);
            }
            Expr::Masquerade | Expr::Other(_) => {}
        });
    }

    /// From the attributes of one NFTA_LIST_ELEM.
    pub(crate) fn decode(attrs: &[(u16, &[u8])]) -> Result<Expr, Error> {
        let name = attr::get_str(attrs, NFTA_EXPR_NAME)
            .ok_or_else(|| Error::Decode("an expression without a name".into()))?;
        let data = match attr::find(attrs, NFTA_EXPR_DATA) {
            Some(d) => attr::parse(d)?,
            None => Vec::new(),
        };
        let u32_of = |kind| attr::get_u32(&data, kind).unwrap_or(0);
        let value_of = |kind| -> Result<Vec<u8>, Error> {
            Ok(match attr::find(&data, kind) {
                Some(v) => attr::find(&attr::parse(v)?, NFTA_DATA_VALUE)
                    .unwrap_or_default()
                    .to_vec(),
                None => Vec::new(),
            })
        };
        Ok(match name.as_str() {
            "meta" if attr::find(&data, NFTA_META_DREG).is_some() => Expr::Meta {
                key: MetaKey::from_number(u32_of(NFTA_META_KEY)),
                dreg: u32_of(NFTA_META_DREG),
            },
            "payload" if attr::find(&data, NFTA_PAYLOAD_DREG).is_some() => {
                match PayloadBase::from_number(u32_of(NFTA_PAYLOAD_BASE)) {
                    Some(base) => Expr::Payload {
                        base,
                        offset: u32_of(NFTA_PAYLOAD_OFFSET),
                        len: u32_of(NFTA_PAYLOAD_LEN),
                        dreg: u32_of(NFTA_PAYLOAD_DREG),
                    },
                    None => Expr::Other(name),
                }
            }
            "cmp" => match CmpOp::from_number(u32_of(NFTA_CMP_OP)) {
                Some(op) => Expr::Cmp {
                    op,
                    sreg: u32_of(NFTA_CMP_SREG),
                    data: value_of(NFTA_CMP_DATA)?,
                },
                None => Expr::Other(name),
            },
            "bitwise" if attr::find(&data, NFTA_BITWISE_MASK).is_some() => Expr::Bitwise {
                sreg: u32_of(NFTA_BITWISE_SREG),
                dreg: u32_of(NFTA_BITWISE_DREG),
                mask: value_of(NFTA_BITWISE_MASK)?,
                xor: value_of(NFTA_BITWISE_XOR)?,
            },
            "lookup" => Expr::Lookup {
                set: attr::get_str(&data, NFTA_LOOKUP_SET).unwrap_or_default(),
                sreg: u32_of(NFTA_LOOKUP_SREG),
                dreg: attr::get_u32(&data, NFTA_LOOKUP_DREG),
            },
            "immediate" if u32_of(NFTA_IMMEDIATE_DREG) == REG_VERDICT => {
                let verdict = match attr::find(&data, NFTA_IMMEDIATE_DATA) {
                    Some(v) => Verdict::decode(&attr::parse(v)?)?,
                    None => None,
                };
                match verdict {
                    Some(v) => Expr::Verdict(v),
                    None => Expr::Other(name),
                }
            }
            "counter" => Expr::Counter {
                packets: attr::get_u64(&data, NFTA_COUNTER_PACKETS).unwrap_or(0),
                bytes: attr::get_u64(&data, NFTA_COUNTER_BYTES).unwrap_or(0),
            },
            "masq" => Expr::Masquerade,
            _ => Expr::Other(name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(expr: &Expr) -> Expr {
        let mut w = AttrWriter::new();
        expr.encode(&mut w);
        Expr::decode(&attr::parse(w.as_bytes()).expect("parses")).expect("decodes")
    }

    #[test]
    fn a_meta_load_is_named_meta_with_its_register_and_key() {
        let mut w = AttrWriter::new();
        Expr::Meta {
            key: MetaKey::Iifname,
            dreg: REG_1,
        }
        .encode(&mut w);
        let mut expected = AttrWriter::new();
        expected
            .str(NFTA_EXPR_NAME, "meta")
            .nested(NFTA_EXPR_DATA, |d| {
                d.u32(NFTA_META_DREG, 1).u32(NFTA_META_KEY, 6);
            });
        assert_eq!(w, expected);
    }

    #[test]
    fn every_expression_the_model_writes_reads_back_the_same() {
        let exprs = [
            Expr::Meta {
                key: MetaKey::Nfproto,
                dreg: REG_1,
            },
            Expr::Payload {
                base: PayloadBase::Network,
                offset: 12,
                len: 4,
                dreg: REG_1,
            },
            Expr::Cmp {
                op: CmpOp::Neq,
                sreg: REG_1,
                data: vec![10, 1, 0],
            },
            Expr::Bitwise {
                sreg: REG_1,
                dreg: REG_1,
                mask: vec![0xf0, 0, 0, 0],
                xor: vec![0; 4],
            },
            Expr::Lookup {
                set: "ports".into(),
                sreg: REG_1,
                dreg: Some(REG_VERDICT),
            },
            Expr::Verdict(Verdict::Jump("att-x".into())),
            Expr::Verdict(Verdict::Drop),
            Expr::Counter {
                packets: 3,
                bytes: 180,
            },
            Expr::Masquerade,
        ];
        for expr in &exprs {
            assert_eq!(&round_trip(expr), expr);
        }
    }

    #[test]
    fn an_unknown_expression_keeps_its_name() {
        assert_eq!(
            round_trip(&Expr::Other("limit".into())),
            Expr::Other("limit".into())
        );
    }
}
