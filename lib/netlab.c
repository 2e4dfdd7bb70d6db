// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: a network lab without ip, ethtool or ping binaries: anonymous network
 * namespaces, a veth pair between them (rtnetlink), addresses, link state, ethtool ioctls,
 * and sysfs files as seen from inside a namespace.
 *
 * The namespaces are held only by file descriptors, never bind-mounted under /run/netns,
 * so they and everything in them (veths, RPS masks, threaded NAPI) disappear with the
 * process, even after SIGKILL. There is nothing to journal.
 */
#include "krepro.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <linux/veth.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

#define NS_SELF "/proc/thread-self/ns/net"

/* A socket in nsfd, made on this thread; lib also asks it for the fd of a new namespace
 * (nsfd -1, domain 0). Back in the original namespace after: a thread left in the wrong
 * one would be worse than a failed call. */
int kr_netns_socket(int nsfd, int domain, int type, int proto)
{
	int prev = open(NS_SELF, O_RDONLY | O_CLOEXEC), r = -1;

	if (prev < 0)
		return -1;
	if ((nsfd < 0 ? unshare(CLONE_NEWNET) : setns(nsfd, CLONE_NEWNET)) == 0)
		r = domain ? socket(domain, type | SOCK_CLOEXEC, proto)
			   : open(NS_SELF, O_RDONLY | O_CLOEXEC);
	if (setns(prev, CLONE_NEWNET) < 0) {
		perror("krepro: cannot return to the original network namespace");
		abort();
	}
	close(prev); /* errno: what the call left (setns and close keep it on success) */
	return r;
}

/* ifname in nsfd up, with the address cidr ("10.1.2.1/24", the programs' own; NULL: none) */
static int ifup(int nsfd, const char *ifname, const char *cidr)
{
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	char ip[64];
	unsigned prefix = 24;
	int s = kr_netns_socket(nsfd, AF_INET, SOCK_DGRAM, 0), r = -1;

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	sin->sin_family = AF_INET;
	if (cidr && sscanf(cidr, "%63[^/]/%u", ip, &prefix) > 0)
		inet_pton(AF_INET, ip, &sin->sin_addr);
	if (s >= 0 && (!cidr || (ioctl(s, SIOCSIFADDR, &ifr) == 0 &&
				 (sin->sin_addr.s_addr = htonl(~0u << (32 - prefix)),
				  ioctl(s, SIOCSIFNETMASK, &ifr) == 0))) &&
	    ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	if (s >= 0)
		close(s);
	return r;
}

int kr_netns_new(void)
{
	int fd = kr_netns_socket(-1, 0, 0, 0);

	if (fd >= 0 && ifup(fd, "lo", NULL) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int kr_netns_ethtool(int nsfd, const char *ifname, void *cmd)
{
	struct ifreq ifr = { .ifr_data = cmd };
	int s = kr_netns_socket(nsfd, AF_INET, SOCK_DGRAM, 0);

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	int r = s < 0 ? -1 : ioctl(s, SIOCETHTOOL, &ifr);
	if (s >= 0)
		close(s);
	return r;
}

/* append an rtnetlink attribute to h; returns it (a nest is closed by setting its length) */
static struct rtattr *nl_attr(struct nlmsghdr *h, unsigned short type, const void *p, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), p, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

int kr_veth_create(int ns_a, const char *name_a, const char *addr_a, int ns_b,
		   const char *name_b, const char *addr_b)
{
	union {
		struct nlmsghdr h;
		char buf[4096];
	} m = { .h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
		       .nlmsg_type = RTM_NEWLINK,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL } };
	struct nlmsghdr *h = &m.h;
	struct rtattr *nest[3];

	/* name_a, linkinfo { kind veth, data { peer { ifinfomsg, name_b, netns ns_b } } } */
	nl_attr(h, IFLA_IFNAME, name_a, strlen(name_a) + 1);
	nest[0] = nl_attr(h, IFLA_LINKINFO, NULL, 0);
	nl_attr(h, IFLA_INFO_KIND, "veth", 5);
	nest[1] = nl_attr(h, IFLA_INFO_DATA, NULL, 0);
	nest[2] = nl_attr(h, VETH_INFO_PEER, NULL, 0);
	h->nlmsg_len += NLMSG_ALIGN(sizeof(struct ifinfomsg));
	nl_attr(h, IFLA_IFNAME, name_b, strlen(name_b) + 1);
	nl_attr(h, IFLA_NET_NS_FD, &ns_b, sizeof(ns_b));
	for (int i = 0; i < 3; i++)
		nest[i]->rta_len = (unsigned short)((char *)h + h->nlmsg_len - (char *)nest[i]);
	/* send it in ns_a and read the ack into m */
	int s = kr_netns_socket(ns_a, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	ssize_t n = s < 0 || send(s, h, h->nlmsg_len, 0) < 0 ? -1 : recv(s, &m, sizeof(m), 0);
	int e = n < 0 ? errno : n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) ||
				h->nlmsg_type != NLMSG_ERROR ? EIO
				: -((struct nlmsgerr *)NLMSG_DATA(h))->error;
	if (s >= 0)
		close(s);
	if ((errno = e) || ifup(ns_a, name_a, addr_a) < 0)
		return -1;
	return ifup(ns_b, name_b, addr_b);
}

/* ---- sysfs of a namespace: a thread mounts its own sysfs inside the namespace ---- */
struct sysfs_io {
	int nsfd, err;
	const char *value;
	char *buf, path[512];
	size_t len;
};

static void *sysfs_io(void *arg)
{
	struct sysfs_io *io = arg;
	glob_t g = { 0 };
	int r = -1;

	/* a mount namespace of the thread's own (it goes with it), private so that nothing
	 * propagates to the host's; a glob ("rx-*") writes every match, reads the first */
	if (unshare(CLONE_NEWNS) == 0 && setns(io->nsfd, CLONE_NEWNET) == 0 &&
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0 &&
	    mount("sysfs", "/sys", "sysfs", 0, NULL) == 0) {
		if (glob(io->path, 0, NULL, &g))
			errno = ENOENT;
		else
			for (size_t i = r = 0; r >= 0 && i < (io->value ? g.gl_pathc : 1); i++)
				r = io->value ? kr_write_file(g.gl_pathv[i], io->value)
					      : kr_read_file(g.gl_pathv[i], io->buf, io->len);
		globfree(&g);
	}
	io->err = r < 0 ? errno : 0;
	return NULL;
}

static int netns_sysfs_io(int nsfd, const char *relpath, const char *value, char *buf, size_t len)
{
	struct sysfs_io io = { .nsfd = nsfd, .value = value, .buf = buf, .len = len };
	pthread_t t;

	snprintf(io.path, sizeof(io.path), "/sys/%s", relpath);
	if (kr_thread_start(&t, -1, SCHED_OTHER, 0, sysfs_io, &io) < 0 || pthread_join(t, NULL))
		return -1;
	errno = io.err;
	return io.err ? -1 : 0;
}

int kr_netns_sysfs_write(int nsfd, const char *relpath, const char *value)
{
	return netns_sysfs_io(nsfd, relpath, value, NULL, 0);
}

int kr_netns_sysfs_read(int nsfd, const char *relpath, char *buf, size_t len)
{
	return netns_sysfs_io(nsfd, relpath, NULL, buf, len);
}
