-- Sample database 'harbor', file harbor_v1.sql: same schema as every file in this folder, different rows.
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

INSERT INTO port VALUES (1, 'Bergen', 'Norway', 16.5);
INSERT INTO port VALUES (2, 'Rotterdam', 'Netherlands', 12.5);
INSERT INTO port VALUES (3, 'Gdansk', 'Poland', 14.0);
INSERT INTO port VALUES (4, 'Tromso', 'Norway', 14.0);
INSERT INTO port VALUES (5, 'Antwerp', 'Belgium', 12.5);
INSERT INTO port VALUES (6, 'Aarhus', 'Denmark', 12.5);
INSERT INTO port VALUES (7, 'Le Havre', 'France', 14.0);
INSERT INTO port VALUES (8, 'Stavanger', 'Norway', 16.5);

INSERT INTO ship VALUES (1, 'Northern Tern', 'Panama', 'bulk', 62250, 2010);
INSERT INTO ship VALUES (2, 'Iron Spirit', 'Malta', 'bulk', 40750, 1998);
INSERT INTO ship VALUES (3, 'Swift Crest', 'Malta', 'bulk', 19750, 2005);
INSERT INTO ship VALUES (4, 'Coastal Tern', 'Denmark', 'tanker', 85250, 2016);
INSERT INTO ship VALUES (5, 'Granite Gull', 'Liberia', 'tanker', 44000, 1996);
INSERT INTO ship VALUES (6, 'Coastal Pride', 'Liberia', 'bulk', 82500, 1995);
INSERT INTO ship VALUES (7, 'Granite Spirit', 'Liberia', 'container', 60250, 2012);
INSERT INTO ship VALUES (8, 'Swift Star', 'Norway', 'tanker', 53500, 2007);
INSERT INTO ship VALUES (9, 'Silver Crest', 'Norway', 'bulk', 27000, 2014);
INSERT INTO ship VALUES (10, 'Amber Crest', 'Norway', 'bulk', 21000, 2012);
INSERT INTO ship VALUES (11, 'Iron Crest', 'Norway', 'ferry', 19750, 2007);
INSERT INTO ship VALUES (12, 'Polar Spirit', 'Panama', 'tanker', 65750, 1994);

INSERT INTO voyage VALUES (1, 3, 4, 1, '2023-06-11', 10200);
INSERT INTO voyage VALUES (2, 6, 7, 8, '2023-09-24', 15900);
INSERT INTO voyage VALUES (3, 7, 4, 3, '2023-11-27', 33700);
INSERT INTO voyage VALUES (4, 9, 4, 3, '2023-10-20', 27400);
INSERT INTO voyage VALUES (5, 5, 7, 6, '2023-05-02', 9200);
INSERT INTO voyage VALUES (6, 4, 4, 6, '2023-08-23', 36100);
INSERT INTO voyage VALUES (7, 1, 5, 7, '2023-12-25', 7900);
INSERT INTO voyage VALUES (8, 12, 6, 1, '2023-06-22', 34400);
INSERT INTO voyage VALUES (9, 6, 4, 2, '2023-08-15', 19200);
INSERT INTO voyage VALUES (10, 8, 7, 2, '2023-05-16', 2600);
INSERT INTO voyage VALUES (11, 2, 1, 4, '2023-02-22', 24400);
INSERT INTO voyage VALUES (12, 8, 3, 6, '2023-05-16', 31500);
INSERT INTO voyage VALUES (13, 3, 4, 1, '2023-04-15', 15000);
INSERT INTO voyage VALUES (14, 10, 5, 8, '2023-12-22', 29200);
INSERT INTO voyage VALUES (15, 7, 6, 7, '2023-01-09', 3900);
INSERT INTO voyage VALUES (16, 8, 7, 4, '2023-06-08', 9600);
INSERT INTO voyage VALUES (17, 7, 3, 7, '2023-11-08', 27600);
INSERT INTO voyage VALUES (18, 7, 2, 4, '2023-09-18', 9000);
INSERT INTO voyage VALUES (19, 8, 4, 6, '2023-09-09', 14800);
INSERT INTO voyage VALUES (20, 3, 8, 4, '2023-06-16', 18800);
