package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"

	"github.com/lockchaos/lockchaos/cluster"
)

// requirements is cluster.Requirements(cluster.Docker): a reachable daemon (with its version) and, for each
// kind of server, an image: the default official one or the one `make images` builds offline.
func requirements() []cluster.Requirement {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	daemon := cluster.Requirement{Name: "docker daemon"}
	pool, err := dockerPool(ctx)
	if err != nil {
		daemon.Detail = err.Error()
		daemon.Fix = "install docker (apt-get install docker.io), start it (systemctl start docker) or set DOCKER_HOST; or use --backend local"
		return []cluster.Requirement{daemon}
	}
	daemon.OK = true
	daemon.Detail = pool.Client.Endpoint()
	if env, err := pool.Client.Version(); err == nil {
		daemon.Detail += fmt.Sprintf(" (Docker Engine %s, API %s)", env.Get("Version"), env.Get("ApiVersion"))
	}
	return []cluster.Requirement{
		daemon,
		imageRequirement(pool, "redis image", cluster.DefaultRedisImage, "lockchaos/redis", "--redis-image"),
		imageRequirement(pool, "zookeeper image", cluster.DefaultZooKeeperImage, "lockchaos/zookeeper", "--zookeeper-image"),
		imageRequirement(pool, "postgres image", cluster.DefaultPostgresImage, "lockchaos/postgres", "--postgres-image"),
		imageRequirement(pool, "mariadb image", cluster.DefaultMariaDBImage, "lockchaos/mariadb", "--mariadb-image"),
		imageRequirement(pool, "pgbouncer image", "", cluster.PgBouncerImage, ""),
		imageRequirement(pool, "etcd image", cluster.DefaultEtcdImage, "lockchaos/etcd", "--etcd-image"),
		dockerTopologies(),
	}
}

// dockerTopologies says which topologies the docker backend runs, and which it refuses.
func dockerTopologies() cluster.Requirement {
	var on, off []string
	for _, t := range cluster.Topologies {
		if cluster.OnDocker(t) {
			on = append(on, t)
		} else {
			off = append(off, t)
		}
	}
	r := cluster.Requirement{Name: "topologies", OK: true, Detail: strings.Join(on, ", ")}
	if len(off) > 0 {
		r.Detail += "; not " + strings.Join(off, ", ") + " (use --backend local)"
	}
	return r
}

// imageRequirement is OK when the official image or the locally built one is present, and says
// which flag picks the local one; official "": there is none, the local one is the image.
func imageRequirement(pool *dockertest.Pool, name, official, local, flag string) cluster.Requirement {
	r := cluster.Requirement{Name: name}
	has := func(image string) string {
		img, err := pool.Client.InspectImage(image)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("%s (%d MB, %s)", image, img.Size/1e6, img.Created.Format(time.DateOnly))
	}
	if official == "" {
		if r.Detail = has(local); r.Detail != "" {
			r.OK = true
		} else {
			r.Detail, r.Fix = local+" is not present", "run make images (builds "+local+" offline from the host's packages)"
		}
		return r
	}
	o, l := has(official), has(local)
	switch {
	case o != "" && l != "":
		r.OK, r.Detail = true, o+"; "+l+" ("+flag+" "+local+")"
	case o != "":
		r.OK, r.Detail = true, o
	case l != "":
		r.OK, r.Detail = true, l+"; the default "+official+" is not present: pass "+flag+" "+local
	default:
		r.Detail = "neither " + official + " nor " + local + " is present"
		r.Fix = "run make images (builds " + local + " offline from the host's packages) and pass " + flag + " " + local + ", or docker pull " + official + " where a registry is reachable"
	}
	return r
}
