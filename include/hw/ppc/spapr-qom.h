/*
 * The machine as QEMU's QOM composition tree shows it, for qom-list,
 * qom-get, qom-set, qom-list-get and HMP's info qom-tree:
 *
 *   /                            container
 *   /machine                     TYPE-machine ("pseries-2.0-machine")
 *   /machine/peripheral          container: one child per device, by id
 *   /machine/peripheral-anon     container (empty: the VIO bus names
 *                                every device it is given without an id)
 *   /machine/unattached          container (empty)
 *   /objects                     container: -object and object-add, by id
 *
 * Netdevs are not QOM objects, in QEMU as here; they are reached by id
 * (netdev_del, set_link, x-query-net-stats).  Paths are absolute.
 */
#ifndef HW_PPC_SPAPR_QOM_H
#define HW_PPC_SPAPR_QOM_H

#endif
