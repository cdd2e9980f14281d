//! Counting events in the raw ring-buffer pages that trace_pipe_raw hands
//! out, so the ftrace consumer's record count comes from the file itself.
//!
//! A page is `u64 time_stamp; local_t commit; data[]`, where the low 30 bits
//! of `commit` are the bytes of data (bits 30 and 31 flag missed events).
//! Each event starts with a u32: `type_len` in the low 5 bits. 1..=28: data
//! of `type_len * 4` bytes follows; 0: the next u32 is the length (itself
//! included) and data follows it; 29: padding (length in the next u32, or end
//! of page when the time delta is 0); 30 and 31: 8-byte time records.

/// Count data events (whose trace_entry `common_type` equals `type_id`, if
/// given) in a buffer of whole pages of `page_size` bytes.
pub fn count_events(pages: &[u8], page_size: usize, type_id: Option<u16>) -> u64 {
    pages
        .chunks(page_size)
        .map(|p| count_in_page(p, type_id))
        .sum()
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Count data events in one page.
pub fn count_in_page(page: &[u8], type_id: Option<u16>) -> u64 {
    const HDR: usize = 16;
    let Some(commit) = page.get(8..16) else {
        return 0;
    };
    let commit = u64::from_le_bytes(commit.try_into().unwrap_or([0; 8]));
    let len = (commit & ((1 << 30) - 1)) as usize;
    let end = (HDR + len).min(page.len());
    let mut off = HDR;
    let mut n = 0;
    while off + 4 <= end {
        let Some(h) = u32_at(page, off) else { break };
        let type_len = h & 0x1f;
        let delta = h >> 5;
        let (data_off, total) = match type_len {
            1..=28 => (off + 4, 4 + type_len as usize * 4),
            0 => match u32_at(page, off + 4) {
                Some(l) => (off + 8, 4 + l as usize),
                None => break,
            },
            29 => {
                if delta == 0 {
                    break;
                }
                match u32_at(page, off + 4) {
                    Some(l) => (0, 4 + l as usize),
                    None => break,
                }
            }
            _ => (0, 8),
        };
        if total < 4 {
            break;
        }
        if data_off != 0 {
            let ty = page
                .get(data_off..data_off + 2)
                .map(|s| u16::from_le_bytes([s[0], s[1]]));
            if type_id.is_none() || ty == type_id {
                n += 1;
            }
        }
        off += total;
    }
    n
}

/// Count events in a file of raw pages.
pub fn count_file(
    path: &std::path::Path,
    page_size: usize,
    type_id: Option<u16>,
) -> std::io::Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; page_size * 256];
    let mut total = 0;
    loop {
        // Fill whole pages (reads may be short).
        let mut have = 0;
        while have < buf.len() {
            let n = f.read(&mut buf[have..])?;
            if n == 0 {
                break;
            }
            have += n;
        }
        if have == 0 {
            break;
        }
        total += count_events(&buf[..have], page_size, type_id);
        if have < buf.len() {
            break;
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(events: &[(u32, &[u8])]) -> Vec<u8> {
        let mut data = Vec::new();
        for (type_len, payload) in events {
            data.extend_from_slice(&(type_len | (7 << 5)).to_le_bytes());
            if *type_len == 0 {
                data.extend_from_slice(&((payload.len() + 4) as u32).to_le_bytes());
            }
            data.extend_from_slice(payload);
        }
        let mut p = vec![0u8; 16];
        p[8..16].copy_from_slice(&(data.len() as u64 | 1 << 31).to_le_bytes());
        p.extend_from_slice(&data);
        p.resize(4096, 0);
        p
    }

    #[test]
    fn counts_small_and_large_events_of_one_type() {
        let small = [5u8, 0, 0, 0, 1, 2, 3, 4];
        let other = [6u8, 0, 0, 0, 1, 2, 3, 4];
        let mut big = vec![9u8; 200];
        big[..2].copy_from_slice(&5u16.to_le_bytes());
        let p = page(&[(2, &small), (2, &other), (0, &big), (30, &[0; 4])]);
        assert_eq!(count_in_page(&p, Some(5)), 2);
        assert_eq!(count_in_page(&p, None), 3);
        let two = [p.clone(), p].concat();
        assert_eq!(count_events(&two, 4096, Some(5)), 4);
    }
}
