//! The two things read from a certificate's DER here: its validity (rustls checks it but does
//! not expose it, and rotation is timed by it, for our certificates and for every CA found in
//! a caBundle) and its public key (to tell whether a stored key belongs to it).

/// Seconds since the Unix epoch (negative before 1970).
pub type UnixSeconds = i64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: UnixSeconds,
    pub not_after: UnixSeconds,
}

/// One DER element: its tag, its contents and what follows it.
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let (contents, rest) = rest.split_at(len);
    Some((tag, contents, rest))
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

pub fn validity(cert_der: &[u8]) -> Option<Validity> {
    fields(cert_der).map(|(v, _)| v)
}

/// The SubjectPublicKeyInfo element, header included.
pub fn public_key_info(cert_der: &[u8]) -> Option<&[u8]> {
    fields(cert_der).map(|(_, spki)| spki)
}

/// Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
/// signature, issuer, validity SEQUENCE { notBefore, notAfter }, subject,
/// subjectPublicKeyInfo, ... }, ... }
fn fields(cert_der: &[u8]) -> Option<(Validity, &[u8])> {
    let (SEQUENCE, cert, _) = element(cert_der)? else {
        return None;
    };
    let (SEQUENCE, tbs, _) = element(cert)? else {
        return None;
    };
    let (mut tag, mut contents, mut rest) = element(tbs)?;
    if tag == VERSION {
        (tag, contents, rest) = element(rest)?;
    }
    let _serial = (tag == INTEGER).then_some(contents)?;
    let (SEQUENCE, _signature, rest) = element(rest)? else {
        return None;
    };
    let (SEQUENCE, _issuer, rest) = element(rest)? else {
        return None;
    };
    let (SEQUENCE, validity, rest) = element(rest)? else {
        return None;
    };
    let (SEQUENCE, _subject, rest) = element(rest)? else {
        return None;
    };
    let (SEQUENCE, _, after_spki) = element(rest)? else {
        return None;
    };
    let spki = &rest[..rest.len() - after_spki.len()];
    let (tag, not_before, rest) = element(validity)?;
    let not_before = time(tag, not_before)?;
    let (tag, not_after, _) = element(rest)?;
    let not_after = time(tag, not_after)?;
    let validity = Validity {
        not_before,
        not_after,
    };
    Some((validity, spki))
}

/// UTCTime `YYMMDDHHMMSSZ` (years 1950-2049) or GeneralizedTime `YYYYMMDDHHMMSSZ`, the two
/// forms RFC 5280 allows.
fn time(tag: u8, text: &[u8]) -> Option<UnixSeconds> {
    let (year, rest) = match tag {
        UTC_TIME if text.len() == 13 => {
            let yy = digits(&text[..2])?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &text[2..])
        }
        GENERALIZED_TIME if text.len() == 15 => (digits(&text[..4])?, &text[4..]),
        _ => return None,
    };
    if rest[10] != b'Z' {
        return None;
    }
    let month = digits(&rest[0..2])?;
    let day = digits(&rest[2..4])?;
    let hour = digits(&rest[4..6])?;
    let minute = digits(&rest[6..8])?;
    let second = digits(&rest[8..10])?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3_600 + minute * 60 + second)
}

fn digits(text: &[u8]) -> Option<i64> {
    text.iter().try_fold(0i64, |acc, b| {
        b.is_ascii_digit().then(|| acc * 10 + i64::from(b - b'0'))
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the usual era-based computation).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests;
