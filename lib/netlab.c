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
#include <sys/wait.h>
#include <unistd.h>

static int netns_self(void)
{
	return open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
}

/* back from a namespace entered for one call, prevfd closed: a thread stuck in the wrong
 * namespace would be worse than a failed call */
static void netns_back(int prevfd)
{
	int e = errno;

	if (setns(prevfd, CLONE_NEWNET) < 0) {
		perror("krepro: cannot return to the original network namespace");
		abort();
	}
	close(prevfd);
	errno = e;
}

int kr_netns_socket(int nsfd, int domain, int type, int proto)
{
	int prev = netns_self(), s = -1;

	if (prev < 0)
		return -1;
	if (setns(nsfd, CLONE_NEWNET) == 0)
		s = socket(domain, type | SOCK_CLOEXEC, proto);
	netns_back(prev);
	return s;
}

/* one interface ioctl on ifname in nsfd; ifr is filled in (name set here) */
static int netns_ifreq(int nsfd, const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int s = kr_netns_socket(nsfd, AF_INET, SOCK_DGRAM, 0);

	if (s < 0)
		return -1;
	snprintf(ifr->ifr_name, IFNAMSIZ, "%s", ifname);
	int r = ioctl(s, req, ifr);
	int e = errno;
	close(s);
	errno = e;
	return r;
}

static int netns_link_up(int nsfd, const char *ifname)
{
	struct ifreq ifr = { 0 };

	if (netns_ifreq(nsfd, ifname, SIOCGIFFLAGS, &ifr) < 0)
		return -1;
	ifr.ifr_flags |= IFF_UP;
	return netns_ifreq(nsfd, ifname, SIOCSIFFLAGS, &ifr);
}

int kr_netns_new(void)
{
	int prev = netns_self(), fd = -1;

	if (prev < 0)
		return -1;
	if (unshare(CLONE_NEWNET) == 0)
		fd = netns_self();
	netns_back(prev);
	if (fd >= 0 && netns_link_up(fd, "lo") < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int kr_netns_ifindex(int nsfd, const char *ifname)
{
	struct ifreq ifr = { 0 };
	return netns_ifreq(nsfd, ifname, SIOCGIFINDEX, &ifr) < 0 ? -1 : ifr.ifr_ifindex;
}

int kr_netns_ethtool(int nsfd, const char *ifname, void *cmd)
{
	struct ifreq ifr = { 0 };

	ifr.ifr_data = cmd;
	return netns_ifreq(nsfd, ifname, SIOCETHTOOL, &ifr);
}

/* ---- rtnetlink ---- */
struct nlbuf {
	char data[4096];
	struct nlmsghdr *h;
};

static struct rtattr *nl_attr(struct nlbuf *b, unsigned short type, const void *p, size_t len)
{
	struct rtattr *a = (struct rtattr *)(b->data + NLMSG_ALIGN(b->h->nlmsg_len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), p, len);
	b->h->nlmsg_len = NLMSG_ALIGN(b->h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

static void nl_nest_end(struct nlbuf *b, struct rtattr *a)
{
	a->rta_len = (unsigned short)((char *)b->h + b->h->nlmsg_len - (char *)a);
}

static void *nl_start(struct nlbuf *b, int type, int flags, size_t hdrlen)
{
	memset(b, 0, sizeof(*b));
	b->h = (struct nlmsghdr *)b->data;
	b->h->nlmsg_len = (unsigned)NLMSG_LENGTH(hdrlen);
	b->h->nlmsg_type = (unsigned short)type;
	b->h->nlmsg_flags = (unsigned short)(NLM_F_REQUEST | NLM_F_ACK | flags);
	b->h->nlmsg_seq = 1;
	return NLMSG_DATA(b->h);
}

/* send one request in nsfd and wait for its ack */
static int nl_talk(int nsfd, struct nlbuf *b)
{
	int s = kr_netns_socket(nsfd, AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	char reply[4096];
	struct nlmsghdr *h = (struct nlmsghdr *)reply;
	ssize_t n = s < 0 || send(s, b->h, b->h->nlmsg_len, 0) < 0 ? -1 : recv(s, reply, sizeof(reply), 0);
	int e = n < 0 ? errno : EIO;

	if (s >= 0)
		close(s);
	if (n >= (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) && h->nlmsg_type == NLMSG_ERROR)
		e = -((struct nlmsgerr *)NLMSG_DATA(h))->error;
	errno = e;
	return e ? -1 : 0;
}

static int netns_add_address(int nsfd, const char *ifname, const char *cidr)
{
	char ip[64];
	struct in_addr a;
	unsigned prefix = 24;
	struct nlbuf b;
	int idx = kr_netns_ifindex(nsfd, ifname);

	if (sscanf(cidr, "%63[^/]/%u", ip, &prefix) < 1 || inet_pton(AF_INET, ip, &a) != 1 ||
	    prefix > 32) {
		errno = EINVAL;
		return -1;
	}
	if (idx < 0)
		return -1;
	struct ifaddrmsg *ifa = nl_start(&b, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = (unsigned char)prefix;
	ifa->ifa_index = (unsigned)idx;
	nl_attr(&b, IFA_LOCAL, &a, sizeof(a));
	nl_attr(&b, IFA_ADDRESS, &a, sizeof(a));
	return nl_talk(nsfd, &b);
}

int kr_veth_create(int ns_a, const char *name_a, const char *addr_a, int ns_b,
		   const char *name_b, const char *addr_b)
{
	struct nlbuf b;
	struct ifinfomsg *ifi = nl_start(&b, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, sizeof(*ifi));

	ifi->ifi_family = AF_UNSPEC;
	nl_attr(&b, IFLA_IFNAME, name_a, strlen(name_a) + 1);
	struct rtattr *linkinfo = nl_attr(&b, IFLA_LINKINFO, NULL, 0);
	nl_attr(&b, IFLA_INFO_KIND, "veth", 5);
	struct rtattr *data = nl_attr(&b, IFLA_INFO_DATA, NULL, 0);
	struct rtattr *peer = nl_attr(&b, VETH_INFO_PEER, NULL, 0);
	/* the peer's own ifinfomsg, then its attributes */
	b.h->nlmsg_len += (unsigned)NLMSG_ALIGN(sizeof(struct ifinfomsg));
	nl_attr(&b, IFLA_IFNAME, name_b, strlen(name_b) + 1);
	nl_attr(&b, IFLA_NET_NS_FD, &ns_b, sizeof(ns_b));
	nl_nest_end(&b, peer);
	nl_nest_end(&b, data);
	nl_nest_end(&b, linkinfo);
	if (nl_talk(ns_a, &b) < 0)
		return -1;
	if ((addr_a && netns_add_address(ns_a, name_a, addr_a) < 0) ||
	    (addr_b && netns_add_address(ns_b, name_b, addr_b) < 0))
		return -1;
	if (netns_link_up(ns_a, name_a) < 0 || netns_link_up(ns_b, name_b) < 0)
		return -1;
	return 0;
}

/* ---- sysfs of a namespace: a child mounts its own sysfs inside the namespace ---- */
static int netns_sysfs_io(int nsfd, const char *relpath, const char *value, char *buf, size_t len)
{
	char path[512], tmp[4096];
	int pfd[2], st;
	ssize_t n = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "/sys/%s", relpath);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	if ((pid = fork()) == 0) {
		int fd = -1;
		/* one write() of at most PIPE_BUF bytes: the parent reads it whole */
		if (setns(nsfd, CLONE_NEWNET) == 0 && unshare(CLONE_NEWNS) == 0 &&
		    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("sysfs", "/sys", "sysfs", 0, NULL) == 0 &&
		    (fd = open(path, value ? O_WRONLY : O_RDONLY)) >= 0 &&
		    (value ? write(fd, value, strlen(value)) : (n = read(fd, tmp, sizeof(tmp)))) >= 0 &&
		    write(pfd[1], tmp, (size_t)n) >= 0)
			_exit(0);
		_exit(errno & 0x7f);
	}
	close(pfd[1]);
	if (pid > 0 && buf) {
		n = read(pfd[0], buf, len - 1);
		for (n = n < 0 ? 0 : n; n && buf[n - 1] == '\n'; n--)
			;
		buf[n] = 0;
	}
	close(pfd[0]);
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		errno = pid < 0 ? errno : WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
		return -1;
	}
	return 0;
}

int kr_netns_sysfs_write(int nsfd, const char *relpath, const char *value)
{
	return netns_sysfs_io(nsfd, relpath, value, NULL, 0);
}

int kr_netns_sysfs_read(int nsfd, const char *relpath, char *buf, size_t len)
{
	return netns_sysfs_io(nsfd, relpath, NULL, buf, len);
}
