use msgr_auth::cephx::{CephxClient, CephxProvider, CryptoKey, Keyring};
use msgr_auth::{ConMode, SystemRandom};
use msgr_encoding::{AuthName, EntityAddrvec, EntityName, EntityType};
use msgr_messenger::{Connection, Dispatcher, IncomingMessage, Messenger, Options};
use msgr_protocol::{PolicyName, PolicySet};
use msgr_transport::tcp::Tcp;
use std::sync::Arc;
use std::time::Duration;

struct Quiet;
impl Dispatcher for Quiet {
    fn ms_dispatch(&self, _: &Connection, m: IncomingMessage) {
        eprintln!("msg type {}", m.msg_type);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let addr: EntityAddrvec = args[1].parse().unwrap();
    let ring = Keyring::parse(&std::fs::read_to_string(&args[2]).unwrap()).unwrap();
    let name: AuthName = args[3].parse().unwrap();
    let mode: ConMode = args[4].parse().unwrap();
    let key: CryptoKey = ring.get(&name).unwrap().key.clone();
    let mut client = CephxClient::new(name, key, Arc::new(SystemRandom), msgr_auth::system_clock());
    client.mon_modes = vec![mode];
    client.service_modes = vec![mode];
    let client = Arc::new(client);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let o = Options::new(
            EntityName::new(EntityType::CLIENT, -1),
            PolicySet::new(PolicyName::LossyClient.policy()),
            Arc::new(CephxProvider {
                client: Some(client.clone()),
                server: None,
            }),
        );
        let m = Messenger::new(Tcp::default(), o, Arc::new(Quiet));
        let conn = m.connect(&addr, EntityType::MON);
        match conn.keepalive_roundtrip(Duration::from_secs(5)).await {
            Some(rtt) => println!(
                "mon ok rtt {:?} state {:?} global_id {}",
                rtt,
                conn.state(),
                client.global_id()
            ),
            None => println!("mon FAILED state {:?}", conn.state()),
        }
        for t in [
            EntityType::MON,
            EntityType::OSD,
            EntityType::MGR,
            EntityType::AUTH,
        ] {
            println!("ticket {t}: {:?}", client.ticket(t).map(|t| t.session_key));
        }
        if args.len() > 5 {
            let oaddr: EntityAddrvec = args[5].parse().unwrap();
            let c2 = m.connect(&oaddr, EntityType::OSD);
            match c2.keepalive_roundtrip(Duration::from_secs(5)).await {
                Some(rtt) => println!("osd ok rtt {:?} peer {:?}", rtt, c2.peer_name()),
                None => println!("osd FAILED state {:?}", c2.state()),
            }
        }
        m.shutdown().await;
    });
}
