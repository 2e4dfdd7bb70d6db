// SPDX-License-Identifier: GPL-2.0-only
/*
 * Description: a NIC's hardware timestamping config, for tests/vm/restore_in_guest.sh:
 * "hwtsctl IF" prints "TX_TYPE RX_FILTER" (SIOCGHWTSTAMP); "hwtsctl IF TX RX" sets them first.
 */
#include <linux/net_tstamp.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
int main(int argc, char **argv)
{
	struct hwtstamp_config c = { 0 };
	struct ifreq r = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", argv[1]);
	r.ifr_data = (void *)&c;
	if (argc == 4) {
		c.tx_type = atoi(argv[2]), c.rx_filter = atoi(argv[3]);
		if (ioctl(fd, SIOCSHWTSTAMP, &r) < 0)
			return perror("SIOCSHWTSTAMP"), 1;
	}
	if (ioctl(fd, SIOCGHWTSTAMP, &r) < 0)
		return perror("SIOCGHWTSTAMP"), 1;
	printf("%d %d\n", c.tx_type, c.rx_filter);
	return 0;
}
