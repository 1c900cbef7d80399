//! A handle registered as a service daemon (`rados_service_register`):
//! its beacons to the active mgr.

use std::sync::Arc;
use std::time::Duration;

use msgr_messages::mgr_service::MMgrOpen;

use crate::cluster::Cluster;

impl Cluster {
    /// Starts the service daemon's beacons if it is registered and the
    /// handle connected (at `rados_service_register`, or at `rados_connect`
    /// after it): MMgrOpen then an MMgrReport every 5 s (`mgr_stats_period`)
    /// to the active mgr, from the handle's runtime, until `rados_shutdown`.
    pub(crate) fn start_service(&self) {
        let (Some(svc), Ok(rados)) = (self.admin.service(), self.rados()) else {
            return;
        };
        if self.admin.beacons_running() {
            return;
        }
        let weak = Arc::downgrade(&rados);
        drop(rados);
        let status = Arc::clone(&self.admin.status);
        let task = self.runtime().spawn(async move {
            let mut opened = None;
            loop {
                let Some(rados) = weak.upgrade() else {
                    return;
                };
                let (current, dirty) = {
                    let st = status.lock().unwrap_or_else(|p| p.into_inner());
                    (st.0.clone(), st.1)
                };
                let open = MMgrOpen {
                    daemon_name: svc.daemon.clone(),
                    service_name: svc.service.clone(),
                    service_daemon: true,
                    daemon_metadata: svc.metadata.clone(),
                    daemon_status: current.clone(),
                };
                let sent = rados
                    .service_beacon(&open, dirty.then_some(current), &mut opened)
                    .await;
                drop(rados);
                if sent && dirty {
                    status.lock().unwrap_or_else(|p| p.into_inner()).1 = false;
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        });
        self.admin.set_service_task(task);
    }
}
