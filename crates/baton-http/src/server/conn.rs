//! Connections that a handler can cut: the `reset` fault closes the socket without
//! writing a response.
//!
//! axum hands a handler no socket, so the listener wraps each connection's stream
//! with a shared switch and passes the switch to handlers as connect info. A thrown
//! switch makes every later read and write fail; hyper then drops the connection and
//! the client sees it closed before any response byte.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// The switch of one connection, and its peer.
#[derive(Debug, Clone)]
pub(crate) struct Conn {
    pub peer: SocketAddr,
    cut: Arc<AtomicBool>,
}

impl Conn {
    /// Cut the connection: nothing more is written to it.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }
}

impl Connected<IncomingStream<'_, CuttableListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, CuttableListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP listener whose streams can be cut.
pub(crate) struct CuttableListener(pub TcpListener);

impl Listener for CuttableListener {
    type Io = CuttableStream;
    type Addr = Conn;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let cut = Arc::new(AtomicBool::new(false));
                    return (
                        CuttableStream {
                            inner: stream,
                            cut: cut.clone(),
                        },
                        Conn { peer, cut },
                    );
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(Conn {
            peer: self.0.local_addr()?,
            cut: Arc::new(AtomicBool::new(false)),
        })
    }
}

/// A TCP stream that fails every operation once cut.
pub(crate) struct CuttableStream {
    inner: TcpStream,
    cut: Arc<AtomicBool>,
}

impl CuttableStream {
    fn is_cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }
}

fn reset() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionReset,
        "connection cut by fault injection",
    )
}

impl AsyncRead for CuttableStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.is_cut() {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CuttableStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.is_cut() {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.is_cut() {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
