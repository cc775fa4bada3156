-- One server, one database per service (they must not share tables).
CREATE DATABASE "order";
CREATE DATABASE credit;
