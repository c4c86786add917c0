package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// kubePKI is what a kubernetes topology's apiserver is started with, made fresh for each run:
// a self-signed serving certificate for 127.0.0.1 and localhost (where the apiserver and every
// client's proxy listen), and a key pair to sign service-account tokens with (the apiserver
// refuses to start without one; nothing here uses those tokens).
type kubePKI struct {
	caPEM, keyPEM      []byte // the serving certificate (its own CA) and its key
	saKeyPEM, saPubPEM []byte
}

// kubeFiles are the paths kubePKI.write wrote.
type kubeFiles struct{ cert, key, saKey, saPub, tokens string }

// newKubePKI makes the keys. ECDSA P-256: generated in a millisecond, and the apiserver signs
// service-account tokens with it (ES256).
func newKubePKI() (*kubePKI, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "lockchaos kube-apiserver"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	sa, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(sa)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return nil, err
	}
	return &kubePKI{
		caPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		saKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}),
		saPubPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	}, nil
}

// write puts the keys and the token file (KubeToken, a member of system:masters) into dir.
func (p *kubePKI) write(dir string) (kubeFiles, error) {
	f := kubeFiles{
		cert: filepath.Join(dir, "serving.crt"), key: filepath.Join(dir, "serving.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
		tokens: filepath.Join(dir, "tokens.csv"),
	}
	for path, data := range map[string][]byte{
		f.cert: p.caPEM, f.key: p.keyPEM, f.saKey: p.saKeyPEM, f.saPub: p.saPubPEM,
		f.tokens: []byte(KubeToken + `,lockchaos,lockchaos,"system:masters"` + "\n"),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, err
		}
	}
	return f, nil
}
