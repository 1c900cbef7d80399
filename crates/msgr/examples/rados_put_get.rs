//! A librados program on this crate alone: set up as `rados_create`,
//! `rados_conf_read_file` and `rados_connect` do, then put a file's bytes
//! into an object (as a stream of writes, several in flight), read them
//! back, stat the object, list the pool and remove the object:
//!
//!     cargo run -p msgr --example rados_put_get -- -c /etc/ceph/ceph.conf [--id admin] POOL OBJECT FILE
use msgr::rados::{RadosConfig, RadosError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Errors say what happened (their Display), as a user reads them.
    if let Err(e) = run().await {
        eprintln!("rados_put_get: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // Ceph's options out of the command line, the rest ours.
    let (config, rest) = RadosConfig::new().conf_parse_args(std::env::args().skip(1))?;
    let [pool, object, file] = <[String; 3]>::try_from(rest)
        .map_err(|_| "usage: rados_put_get [-c CONF] [--id ID] POOL OBJECT FILE")?;
    let data = std::fs::read(&file).map_err(|e| format!("{file}: {e}"))?;

    let rados = config.connect().await?;
    let io = rados.ioctx(&pool)?;

    let mut w = io.object(object.as_bytes());
    w.write_all(&data).await?;
    w.shutdown().await?; // every write acknowledged
    let mut back = Vec::new();
    io.object(object.as_bytes()).read_to_end(&mut back).await?;
    if back != data {
        return Err(format!("read back {} bytes that differ from the file", back.len()).into());
    }
    let stat = io.stat(object.as_bytes()).await?;
    println!(
        "{pool}/{object} size {} mtime {}",
        stat.size, stat.mtime.sec
    );

    let mut listed = false;
    let mut objects = io.list_objects();
    while let Some(entry) = objects.next().await {
        listed |= entry?.name == object.as_bytes();
    }
    println!("listed: {listed}");
    io.remove(object.as_bytes()).await?;
    match io.stat(object.as_bytes()).await {
        Err(RadosError::Os { errno: -2, .. }) => println!("removed"),
        other => return Err(format!("after remove, stat said {other:?}").into()),
    }
    rados.shutdown().await;
    Ok(())
}
