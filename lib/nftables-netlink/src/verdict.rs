//! Verdicts: what a rule, a map element or a chain's policy decides, in the kernel's numbers.

use crate::attr::{self, AttrWriter};
use crate::sys::*;
use crate::Error;

/// A verdict: what a rule, a map element or a chain's policy decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    Drop,
    Continue,
    Return,
    Jump(String),
    Goto(String),
    /// A code this crate has no name for.
    Other(i32),
}

impl Verdict {
    pub(crate) fn code(&self) -> i32 {
        match self {
            Verdict::Accept => NF_ACCEPT,
            Verdict::Drop => NF_DROP,
            Verdict::Continue => NFT_CONTINUE,
            Verdict::Return => NFT_RETURN,
            Verdict::Jump(_) => NFT_JUMP,
            Verdict::Goto(_) => NFT_GOTO,
            Verdict::Other(c) => *c,
        }
    }

    pub(crate) fn from_code(code: i32, chain: Option<String>) -> Verdict {
        match (code, chain) {
            (NF_ACCEPT, _) => Verdict::Accept,
            (NF_DROP, _) => Verdict::Drop,
            (NFT_CONTINUE, _) => Verdict::Continue,
            (NFT_RETURN, _) => Verdict::Return,
            (NFT_JUMP, Some(c)) => Verdict::Jump(c),
            (NFT_GOTO, Some(c)) => Verdict::Goto(c),
            (c, _) => Verdict::Other(c),
        }
    }

    /// The chain a jump or goto leads to.
    pub fn target(&self) -> Option<&str> {
        match self {
            Verdict::Jump(c) | Verdict::Goto(c) => Some(c),
            _ => None,
        }
    }

    /// NFTA_DATA_VERDICT's content.
    pub(crate) fn encode(&self, w: &mut AttrWriter) {
        w.nested(NFTA_DATA_VERDICT, |v| {
            v.u32(NFTA_VERDICT_CODE, self.code() as u32);
            if let Some(chain) = self.target() {
                v.str(NFTA_VERDICT_CHAIN, chain);
            }
        });
    }

    /// From the attributes of an NFTA_*_DATA holding a verdict.
    pub(crate) fn decode(data: &[(u16, &[u8])]) -> Result<Option<Verdict>, Error> {
        let Some(v) = attr::find(data, NFTA_DATA_VERDICT) else {
            return Ok(None);
        };
        let v = attr::parse(v)?;
        let code = attr::get_u32(&v, NFTA_VERDICT_CODE)
            .ok_or_else(|| Error::Decode("a verdict without its code".into()))?;
        Ok(Some(Verdict::from_code(
            code as i32,
            attr::get_str(&v, NFTA_VERDICT_CHAIN),
        )))
    }
}
