-- Sample database 'harbor', file harbor.sql: same schema as every file in this folder, different rows.
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

INSERT INTO port VALUES (1, 'Bergen', 'Norway', 12.5);
INSERT INTO port VALUES (2, 'Rotterdam', 'Netherlands', 12.5);
INSERT INTO port VALUES (3, 'Gdansk', 'Poland', 16.5);
INSERT INTO port VALUES (4, 'Tromso', 'Norway', 12.5);
INSERT INTO port VALUES (5, 'Antwerp', 'Belgium', 11.0);
INSERT INTO port VALUES (6, 'Aarhus', 'Denmark', 14.0);
INSERT INTO port VALUES (7, 'Le Havre', 'France', 12.5);
INSERT INTO port VALUES (8, 'Stavanger', 'Norway', 14.0);

INSERT INTO ship VALUES (1, 'Northern Star', 'Norway', 'container', 52000, 2004);
INSERT INTO ship VALUES (2, 'Granite Crest', 'Liberia', 'tanker', 29250, 2015);
INSERT INTO ship VALUES (3, 'Granite Pride', 'Norway', 'container', 41000, 2007);
INSERT INTO ship VALUES (4, 'Polar Tern', 'Denmark', 'tanker', 33500, 2008);
INSERT INTO ship VALUES (5, 'Iron Pride', 'Denmark', 'bulk', 84000, 2010);
INSERT INTO ship VALUES (6, 'Polar Pride', 'Malta', 'tanker', 23750, 1996);
INSERT INTO ship VALUES (7, 'Amber Horizon', 'Norway', 'tanker', 83500, 1997);
INSERT INTO ship VALUES (8, 'Morning Wave', 'Liberia', 'tanker', 74500, 2016);
INSERT INTO ship VALUES (9, 'Polar Voyager', 'Panama', 'tanker', 35250, 2010);
INSERT INTO ship VALUES (10, 'Blue Voyager', 'Norway', 'ferry', 44750, 1997);
INSERT INTO ship VALUES (11, 'Morning Spirit', 'Liberia', 'container', 79500, 2008);
INSERT INTO ship VALUES (12, 'Silver Crest', 'Liberia', 'bulk', 74000, 2015);

INSERT INTO voyage VALUES (1, 7, 4, 5, '2023-01-17', 17500);
INSERT INTO voyage VALUES (2, 11, 2, 7, '2023-09-10', 20500);
INSERT INTO voyage VALUES (3, 3, 7, 3, '2023-10-11', 11100);
INSERT INTO voyage VALUES (4, 6, 1, 8, '2023-06-28', 39800);
INSERT INTO voyage VALUES (5, 5, 1, 7, '2023-01-13', 13200);
INSERT INTO voyage VALUES (6, 9, 4, 5, '2023-04-16', 4500);
INSERT INTO voyage VALUES (7, 11, 1, 3, '2023-03-27', 11200);
INSERT INTO voyage VALUES (8, 5, 3, 6, '2023-12-05', 37800);
INSERT INTO voyage VALUES (9, 2, 8, 5, '2023-05-10', 23600);
INSERT INTO voyage VALUES (10, 8, 3, 6, '2023-11-24', 7900);
INSERT INTO voyage VALUES (11, 9, 6, 1, '2023-11-20', 34800);
INSERT INTO voyage VALUES (12, 1, 7, 3, '2023-02-09', 29500);
INSERT INTO voyage VALUES (13, 2, 7, 3, '2023-08-22', 11700);
INSERT INTO voyage VALUES (14, 4, 2, 8, '2023-08-04', 25900);
INSERT INTO voyage VALUES (15, 6, 1, 4, '2023-06-18', 20800);
INSERT INTO voyage VALUES (16, 10, 1, 7, '2023-03-03', 25700);
INSERT INTO voyage VALUES (17, 5, 7, 3, '2023-11-27', 27700);
INSERT INTO voyage VALUES (18, 10, 2, 6, '2023-09-05', 12200);
INSERT INTO voyage VALUES (19, 6, 7, 5, '2023-01-14', 32300);
INSERT INTO voyage VALUES (20, 5, 5, 7, '2023-10-16', 33300);
