package cluster

import (
	"fmt"
	"net"
	"strconv"
)

// freePorts asks the kernel for n distinct free ports on 127.0.0.1 and releases them. Holding all
// listeners open until the end keeps the kernel from handing out the same port twice. Another
// process may take a port before our server binds it, so starters retry with new ports when the
// server's log says the address is in use (see isAddrInUse).
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func localAddr(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
