"""Opens a TCP connection of its own: debugkit must not change its socket options."""
import socket

server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
server.bind(("127.0.0.1", 0))
server.listen(1)
client = socket.create_connection(server.getsockname())
conn, _ = server.accept()
print("client nodelay", client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
print("accepted nodelay", conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
