//! The objects of a ruleset, as nft names them: tables, chains, sets and maps, their elements,
//! rules and verdicts.

use crate::attr::{self, AttrWriter};
use crate::expr::Expr;
use crate::sys::*;
use crate::verdict::Verdict;
use crate::Error;

/// The address family of a table (`nft add table <family> ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Inet,
    Ip,
    Arp,
    Netdev,
    Bridge,
    Ip6,
}

impl Family {
    /// The NFPROTO_* number.
    pub fn number(self) -> u8 {
        match self {
            Family::Inet => 1,
            Family::Ip => 2,
            Family::Arp => 3,
            Family::Netdev => 5,
            Family::Bridge => 7,
            Family::Ip6 => 10,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Inet => "inet",
            Family::Ip => "ip",
            Family::Arp => "arp",
            Family::Netdev => "netdev",
            Family::Bridge => "bridge",
            Family::Ip6 => "ip6",
        }
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A table: a family and a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Table {
    pub family: Family,
    pub name: String,
}

impl Table {
    pub fn new(family: Family, name: impl Into<String>) -> Table {
        Table {
            family,
            name: name.into(),
        }
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.family, self.name)
    }
}

/// The hook a base chain is attached to. The numbers are the same for every family that has
/// the hook (NF_INET_* and NF_BR_* agree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    Prerouting,
    Input,
    Forward,
    Output,
    Postrouting,
}

impl Hook {
    fn number(self) -> u32 {
        match self {
            Hook::Prerouting => 0,
            Hook::Input => 1,
            Hook::Forward => 2,
            Hook::Output => 3,
            Hook::Postrouting => 4,
        }
    }

    fn from_number(n: u32) -> Option<Hook> {
        Some(match n {
            0 => Hook::Prerouting,
            1 => Hook::Input,
            2 => Hook::Forward,
            3 => Hook::Output,
            4 => Hook::Postrouting,
            _ => return None,
        })
    }
}

/// `type filter|nat|route`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainType {
    Filter,
    Nat,
    Route,
}

impl ChainType {
    fn name(self) -> &'static str {
        match self {
            ChainType::Filter => "filter",
            ChainType::Nat => "nat",
            ChainType::Route => "route",
        }
    }
}

/// What makes a chain a base chain: `{ type <type> hook <hook> priority <n>; policy <p>; }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseChain {
    pub kind: ChainType,
    pub hook: Hook,
    /// `srcnat` is 100, `dstnat` -100, `filter` 0.
    pub priority: i32,
    /// Accept or drop.
    pub policy: Verdict,
}

/// A chain; a regular one (reached by jumps) unless `base` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    pub table: Table,
    pub name: String,
    pub base: Option<BaseChain>,
}

impl Chain {
    pub fn new(table: &Table, name: impl Into<String>) -> Chain {
        Chain {
            table: table.clone(),
            name: name.into(),
            base: None,
        }
    }

    pub(crate) fn encode(&self, w: &mut AttrWriter) {
        w.str(NFTA_CHAIN_TABLE, &self.table.name)
            .str(NFTA_CHAIN_NAME, &self.name);
        if let Some(base) = &self.base {
            w.nested(NFTA_CHAIN_HOOK, |h| {
                h.u32(NFTA_HOOK_HOOKNUM, base.hook.number())
                    .u32(NFTA_HOOK_PRIORITY, base.priority as u32);
            })
            .u32(NFTA_CHAIN_POLICY, base.policy.code() as u32)
            .str(NFTA_CHAIN_TYPE, base.kind.name());
        }
    }

    pub(crate) fn decode(family: Family, attrs: &[(u16, &[u8])]) -> Result<Chain, Error> {
        let table = attr::get_str(attrs, NFTA_CHAIN_TABLE)
            .ok_or_else(|| Error::Decode("a chain without its table".into()))?;
        let name = attr::get_str(attrs, NFTA_CHAIN_NAME)
            .ok_or_else(|| Error::Decode("a chain without a name".into()))?;
        let base = match attr::find(attrs, NFTA_CHAIN_HOOK) {
            None => None,
            Some(hook) => {
                let hook = attr::parse(hook)?;
                let kind = match attr::get_str(attrs, NFTA_CHAIN_TYPE).as_deref() {
                    Some("nat") => ChainType::Nat,
                    Some("route") => ChainType::Route,
                    _ => ChainType::Filter,
                };
                let policy = attr::get_u32(attrs, NFTA_CHAIN_POLICY)
                    .map(|p| Verdict::from_code(p as i32, None))
                    .unwrap_or(Verdict::Accept);
                attr::get_u32(&hook, NFTA_HOOK_HOOKNUM)
                    .and_then(Hook::from_number)
                    .map(|h| BaseChain {
                        kind,
                        hook: h,
                        priority: attr::get_u32(&hook, NFTA_HOOK_PRIORITY).unwrap_or(0) as i32,
                        policy,
                    })
            }
        };
        Ok(Chain {
            table: Table::new(family, table),
            name,
            base,
        })
    }
}

/// The type of a set's keys, with what nft needs to print them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// `ifname`: an interface name, NUL-padded to 16 bytes.
    Ifname,
    /// `ipv4_addr`
    Ipv4Addr,
    /// `ipv6_addr`
    Ipv6Addr,
    /// `ether_addr`
    EtherAddr,
}

impl KeyType {
    fn nft_type(self) -> u32 {
        match self {
            KeyType::Ifname => TYPE_IFNAME,
            KeyType::Ipv4Addr => TYPE_IPADDR,
            KeyType::Ipv6Addr => TYPE_IP6ADDR,
            KeyType::EtherAddr => TYPE_ETHERADDR,
        }
    }

    /// The length of a key, in bytes.
    pub fn key_len(self) -> usize {
        match self {
            KeyType::Ifname | KeyType::Ipv6Addr => 16,
            KeyType::Ipv4Addr => 4,
            KeyType::EtherAddr => 6,
        }
    }

    fn byteorder(self) -> u32 {
        match self {
            KeyType::Ifname => BYTEORDER_HOST_ENDIAN,
            _ => BYTEORDER_BIG_ENDIAN,
        }
    }
}

/// A named set; with `verdict_map`, a verdict map (`type <key> : verdict`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Set {
    pub table: Table,
    pub name: String,
    pub key: KeyType,
    pub verdict_map: bool,
}

impl Set {
    /// `map <name> { type <key> : verdict; }`
    pub fn verdict_map(table: &Table, name: impl Into<String>, key: KeyType) -> Set {
        Set {
            table: table.clone(),
            name: name.into(),
            key,
            verdict_map: true,
        }
    }

    pub(crate) fn encode(&self, w: &mut AttrWriter) {
        w.str(NFTA_SET_TABLE, &self.table.name)
            .str(NFTA_SET_NAME, &self.name)
            .u32(
                NFTA_SET_FLAGS,
                if self.verdict_map { NFT_SET_MAP } else { 0 },
            )
            .u32(NFTA_SET_KEY_TYPE, self.key.nft_type())
            .u32(NFTA_SET_KEY_LEN, self.key.key_len() as u32);
        // nft keeps the byte order of keys (and data) in the set's user data, as u32s in host
        // order; it prints the keys by it.
        let mut udata = Vec::new();
        udata.extend([UDATA_SET_KEYBYTEORDER, 4]);
        udata.extend(self.key.byteorder().to_ne_bytes());
        if self.verdict_map {
            w.u32(NFTA_SET_DATA_TYPE, NFT_DATA_VERDICT)
                .u32(NFTA_SET_DATA_LEN, 0);
            // A verdict has no byte order; nft would swap the bytes of one said to be in host
            // order.
            udata.extend([UDATA_SET_DATABYTEORDER, 4]);
            udata.extend(BYTEORDER_INVALID.to_ne_bytes());
        }
        w.bytes(NFTA_SET_USERDATA, &udata);
    }
}

/// An element of a set: its key, and for a verdict map what it maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub key: Vec<u8>,
    pub verdict: Option<Verdict>,
}

impl Element {
    /// `<key> : <verdict>` of a verdict map.
    pub fn mapping(key: Vec<u8>, verdict: Verdict) -> Element {
        Element {
            key,
            verdict: Some(verdict),
        }
    }

    /// The key alone, which is all a delete needs.
    pub fn key(key: Vec<u8>) -> Element {
        Element { key, verdict: None }
    }

    pub(crate) fn encode(&self, w: &mut AttrWriter) {
        w.nested(NFTA_LIST_ELEM, |e| {
            e.nested(NFTA_SET_ELEM_KEY, |k| {
                k.bytes(NFTA_DATA_VALUE, &self.key);
            });
            if let Some(verdict) = &self.verdict {
                e.nested(NFTA_SET_ELEM_DATA, |d| verdict.encode(d));
            }
        });
    }

    pub(crate) fn decode(attrs: &[(u16, &[u8])]) -> Result<Element, Error> {
        let key = attr::find(attrs, NFTA_SET_ELEM_KEY)
            .ok_or_else(|| Error::Decode("a set element without a key".into()))?;
        let key = attr::find(&attr::parse(key)?, NFTA_DATA_VALUE)
            .unwrap_or_default()
            .to_vec();
        let verdict = match attr::find(attrs, NFTA_SET_ELEM_DATA) {
            Some(data) => Verdict::decode(&attr::parse(data)?)?,
            None => None,
        };
        Ok(Element { key, verdict })
    }
}

/// An interface name as a set key or a compared value: NUL-padded to IFNAMSIZ.
pub fn ifname_key(name: &str) -> Vec<u8> {
    let mut key = name.as_bytes().to_vec();
    key.truncate(15);
    key.resize(16, 0);
    key
}

/// An interface name back from its key.
pub fn ifname_from_key(key: &[u8]) -> String {
    let end = key.iter().position(|b| *b == 0).unwrap_or(key.len());
    String::from_utf8_lossy(&key[..end]).into_owned()
}

/// A rule: expressions in order, in a chain. `handle` is the kernel's, known once listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub table: Table,
    pub chain: String,
    pub handle: Option<u64>,
    pub exprs: Vec<Expr>,
    /// `comment "..."`, kept where nft keeps it (the rule's user data).
    pub comment: Option<String>,
}

impl Rule {
    pub fn new(chain: &Chain, exprs: Vec<Expr>) -> Rule {
        Rule {
            table: chain.table.clone(),
            chain: chain.name.clone(),
            handle: None,
            exprs,
            comment: None,
        }
    }

    pub fn with_comment(mut self, comment: impl Into<String>) -> Rule {
        self.comment = Some(comment.into());
        self
    }

    pub(crate) fn encode(&self, w: &mut AttrWriter) {
        w.str(NFTA_RULE_TABLE, &self.table.name)
            .str(NFTA_RULE_CHAIN, &self.chain)
            .nested(NFTA_RULE_EXPRESSIONS, |list| {
                for expr in &self.exprs {
                    list.nested(NFTA_LIST_ELEM, |e| expr.encode(e));
                }
            });
        if let Some(comment) = &self.comment {
            w.bytes(NFTA_RULE_USERDATA, &comment_udata(comment));
        }
    }

    pub(crate) fn decode(family: Family, attrs: &[(u16, &[u8])]) -> Result<Rule, Error> {
        let table = attr::get_str(attrs, NFTA_RULE_TABLE)
            .ok_or_else(|| Error::Decode("a rule without its table".into()))?;
        let chain = attr::get_str(attrs, NFTA_RULE_CHAIN)
            .ok_or_else(|| Error::Decode("a rule without its chain".into()))?;
        let mut exprs = Vec::new();
        if let Some(list) = attr::find(attrs, NFTA_RULE_EXPRESSIONS) {
            for (_, e) in attr::parse(list)? {
                exprs.push(Expr::decode(&attr::parse(e)?)?);
            }
        }
        Ok(Rule {
            table: Table::new(family, table),
            chain,
            handle: attr::get_u64(attrs, NFTA_RULE_HANDLE),
            exprs,
            comment: attr::find(attrs, NFTA_RULE_USERDATA).and_then(comment_from_udata),
        })
    }
}

/// The user data nft writes for a comment: one TLV (type, length with NUL, text, NUL). nft
/// truncates comments to 128 bytes; so does this.
fn comment_udata(comment: &str) -> Vec<u8> {
    let mut text: Vec<u8> = comment.bytes().filter(|b| *b != 0).take(127).collect();
    text.push(0);
    let mut udata = vec![UDATA_RULE_COMMENT, text.len() as u8];
    udata.extend(text);
    udata
}

fn comment_from_udata(mut udata: &[u8]) -> Option<String> {
    while let [kind, len, rest @ ..] = udata {
        let value = rest.get(..usize::from(*len))?;
        if *kind == UDATA_RULE_COMMENT {
            let end = value.iter().position(|b| *b == 0).unwrap_or(value.len());
            return Some(String::from_utf8_lossy(&value[..end]).into_owned());
        }
        udata = &rest[usize::from(*len)..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ifname_keys_are_nul_padded_to_sixteen_bytes() {
        let key = ifname_key("veth1");
        assert_eq!(key.len(), 16);
        assert_eq!(&key[..6], b"veth1\0");
        assert_eq!(ifname_from_key(&key), "veth1");
    }

    #[test]
    fn a_comment_is_stored_as_nft_stores_it() {
        // What `nft --debug=netlink` shows for `comment "n/c/i"`.
        assert_eq!(comment_udata("n/c/i"), b"\x00\x06n/c/i\x00");
        assert_eq!(
            comment_from_udata(b"\x00\x06n/c/i\x00").as_deref(),
            Some("n/c/i")
        );
    }

    #[test]
    fn a_jump_element_round_trips() {
        let elem = Element::mapping(ifname_key("veth1"), Verdict::Jump("att-x".into()));
        let mut w = AttrWriter::new();
        elem.encode(&mut w);
        let list = attr::parse(w.as_bytes()).expect("parses");
        let inner = attr::parse(list[0].1).expect("parses");
        assert_eq!(Element::decode(&inner).expect("decodes"), elem);
    }

    #[test]
    fn a_base_chain_round_trips() {
        let table = Table::new(Family::Bridge, "t");
        let chain = Chain {
            base: Some(BaseChain {
                kind: ChainType::Filter,
                hook: Hook::Prerouting,
                priority: -300,
                policy: Verdict::Accept,
            }),
            ..Chain::new(&table, "prerouting")
        };
        let mut w = AttrWriter::new();
        chain.encode(&mut w);
        let attrs = attr::parse(w.as_bytes()).expect("parses");
        assert_eq!(
            Chain::decode(Family::Bridge, &attrs).expect("decodes"),
            chain
        );
    }
}
