//! Which processes listen on a TCP port: the listening sockets in `/proc/net/tcp` and
//! `/proc/net/tcp6`, then the processes holding one of them open. This is how the MCP
//! bridge finds a daemon it did not start, or one a stale pid file no longer names.

use std::collections::HashSet;

/// The pids of the processes with a socket listening on `port` (any address), in
/// ascending order. Empty where `/proc` cannot be read.
pub(crate) fn listeners(port: u16) -> Vec<u32> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return Vec::new();
    }
    let Some(processes) = super::procfs::processes() else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = processes
        .filter(|(_, dir)| {
            std::fs::read_dir(dir.join("fd")).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path()).is_ok_and(|link| {
                        link.to_str()
                            .and_then(socket_inode)
                            .is_some_and(|inode| inodes.contains(&inode))
                    })
                })
            })
        })
        .map(|(pid, _)| pid)
        .collect();
    pids.sort_unstable();
    pids
}

/// The inodes of the sockets listening on `port`, over IPv4 and IPv6.
fn listening_inodes(port: u16) -> HashSet<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| listening_in_table(&table, port))
        .collect()
}

/// The listening sockets' inodes on `port` in one `/proc/net/tcp*` table: a header line,
/// then `sl local_address rem_address st … inode …`, addresses as `HEXADDR:HEXPORT` and
/// `0A` as the LISTEN state.
fn listening_in_table(table: &str, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            let local = fields.get(1)?;
            let state = fields.get(3)?;
            let inode = fields.get(9)?.parse::<u64>().ok()?;
            let (_, hex_port) = local.rsplit_once(':')?;
            let listening_port = u16::from_str_radix(hex_port, 16).ok()?;
            (*state == LISTEN && listening_port == port && inode != 0).then_some(inode)
        })
        .collect()
}

/// The inode in a `socket:[12345]` fd link.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn only_listening_sockets_on_the_port_count() {
        assert_eq!(listening_in_table(TABLE, 8080), vec![4242]);
        assert_eq!(listening_in_table(TABLE, 22), vec![99]);
        assert!(listening_in_table(TABLE, 9).is_empty());
    }

    #[test]
    fn reads_socket_links() {
        assert_eq!(socket_inode("socket:[4242]"), Some(4242));
        assert_eq!(socket_inode("pipe:[4242]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    #[test]
    fn finds_this_process_listening() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        assert_eq!(listeners(port), vec![std::process::id()]);
        drop(listener);
        assert!(listeners(port).is_empty());
    }
}
