-- Sample database 'harbor', file harbor_v2.sql: same schema as every file in this folder, different rows.
-- Written for baton's sample set; materialized into harbor/<file>.sqlite by baton-data.

CREATE TABLE port (
    port_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT,
    max_draft_m REAL
);

CREATE TABLE ship (
    ship_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    flag TEXT,
    ship_type TEXT,
    tonnage INTEGER,
    built_year INTEGER
);

CREATE TABLE voyage (
    voyage_id INTEGER PRIMARY KEY,
    ship_id INTEGER NOT NULL REFERENCES ship (ship_id),
    from_port INTEGER NOT NULL REFERENCES port (port_id),
    to_port INTEGER NOT NULL REFERENCES port (port_id),
    departure_date TEXT,
    cargo_tons INTEGER
);

INSERT INTO port VALUES (1, 'Bergen', 'Norway', 11.0);
INSERT INTO port VALUES (2, 'Rotterdam', 'Netherlands', 12.5);
INSERT INTO port VALUES (3, 'Gdansk', 'Poland', 14.0);
INSERT INTO port VALUES (4, 'Tromso', 'Norway', 14.0);
INSERT INTO port VALUES (5, 'Antwerp', 'Belgium', 11.0);
INSERT INTO port VALUES (6, 'Aarhus', 'Denmark', 16.5);
INSERT INTO port VALUES (7, 'Le Havre', 'France', 11.0);
INSERT INTO port VALUES (8, 'Stavanger', 'Norway', 16.5);

INSERT INTO ship VALUES (1, 'Coastal Voyager', 'Malta', 'tanker', 58500, 1999);
INSERT INTO ship VALUES (2, 'Morning Gull', 'Panama', 'container', 59000, 1994);
INSERT INTO ship VALUES (3, 'Morning Star', 'Norway', 'ferry', 40500, 2014);
INSERT INTO ship VALUES (4, 'Silver Pride', 'Malta', 'container', 33500, 2020);
INSERT INTO ship VALUES (5, 'Northern Wave', 'Panama', 'bulk', 82000, 2000);
INSERT INTO ship VALUES (6, 'Swift Horizon', 'Malta', 'tanker', 18750, 2008);
INSERT INTO ship VALUES (7, 'Polar Spirit', 'Malta', 'tanker', 46250, 1992);
INSERT INTO ship VALUES (8, 'Polar Pride', 'Liberia', 'bulk', 74250, 2019);
INSERT INTO ship VALUES (9, 'Northern Tern', 'Norway', 'bulk', 80500, 2020);
INSERT INTO ship VALUES (10, 'Swift Wave', 'Malta', 'tanker', 57000, 2014);
INSERT INTO ship VALUES (11, 'Morning Tern', 'Liberia', 'bulk', 24750, 1995);
INSERT INTO ship VALUES (12, 'Blue Horizon', 'Norway', 'bulk', 26750, 2001);

INSERT INTO voyage VALUES (1, 1, 1, 4, '2023-08-02', 17600);
INSERT INTO voyage VALUES (2, 11, 5, 1, '2023-12-14', 1000);
INSERT INTO voyage VALUES (3, 2, 3, 2, '2023-03-01', 22300);
INSERT INTO voyage VALUES (4, 8, 1, 3, '2023-09-25', 2300);
INSERT INTO voyage VALUES (5, 1, 3, 8, '2023-05-23', 36200);
INSERT INTO voyage VALUES (6, 6, 3, 2, '2023-03-09', 26500);
INSERT INTO voyage VALUES (7, 12, 5, 4, '2023-04-15', 20900);
INSERT INTO voyage VALUES (8, 1, 1, 5, '2023-01-25', 37100);
INSERT INTO voyage VALUES (9, 10, 6, 4, '2023-12-17', 39000);
INSERT INTO voyage VALUES (10, 4, 4, 7, '2023-05-24', 18900);
INSERT INTO voyage VALUES (11, 8, 2, 3, '2023-12-09', 5200);
INSERT INTO voyage VALUES (12, 12, 4, 6, '2023-05-15', 16700);
INSERT INTO voyage VALUES (13, 2, 7, 4, '2023-04-28', 19700);
INSERT INTO voyage VALUES (14, 4, 4, 3, '2023-10-16', 22800);
INSERT INTO voyage VALUES (15, 9, 6, 5, '2023-03-23', 8300);
INSERT INTO voyage VALUES (16, 4, 4, 8, '2023-09-08', 8700);
INSERT INTO voyage VALUES (17, 8, 8, 4, '2023-04-13', 27800);
INSERT INTO voyage VALUES (18, 1, 8, 1, '2023-11-10', 5400);
INSERT INTO voyage VALUES (19, 5, 8, 6, '2023-03-06', 29300);
INSERT INTO voyage VALUES (20, 9, 7, 8, '2023-06-20', 2200);
